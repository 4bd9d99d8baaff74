//! Stan's constraint transforms.
