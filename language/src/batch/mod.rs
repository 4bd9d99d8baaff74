//! The batching IRs: the CFG IR of basic blocks ([`cfg`], Radul et al.
//! 2020 Fig. 2) lowered from MIR and gradient programs, which the
//! executors run for a whole batch of chains, each lane its own control
//! path. The program-counter IR (Fig. 4, [`pc`]: one merged graph with
//! explicit stacks, storage classes and batched-vs-shared marks) is built
//! from it by [`pc::build`]. [`lower`] ends with [`sra`], which splits
//! tuple locals into one local per component.

pub mod cfg;
mod lower;
pub mod pc;
mod print;
pub mod sra;

pub use lower::{BATCH_NOT_SUPPORTED, lower, lower_generated_quantities, lower_gradient};
pub use print::print_cfg;

/// Name of the entry function of a lowered gradient program.
pub const GRADIENT_ENTRY: &str = "log_density_gradient";
/// Entry names of [`lower_generated_quantities`].
pub const CONSTRAIN_PARAMETERS_ENTRY: &str = "constrain_parameters";
pub const TRANSFORMED_PARAMETERS_ENTRY: &str = "transformed_parameters";
pub const GENERATED_QUANTITIES_ENTRY: &str = "generated_quantities";

#[cfg(test)]
mod tests;
