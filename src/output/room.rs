//! Room on disk for a draws file: the free space of its file system, space
//! reserved ahead of the writes that need it, and what a failed write means
//! in words.
//!
//! HDF5 allocates a chunk's space in the file when the chunk is first
//! written, and a write that finds the disk full can leave its metadata
//! pointing past the end of the file: a file no reader opens. So the
//! writer reserves the blocks a write will need (`fallocate` with
//! `FALLOC_FL_KEEP_SIZE`, which leaves the file's length alone) before it
//! writes; when they cannot be had, the write is refused before HDF5 sees
//! it and the file is closed with everything written before.
//!
//! Test switches: `BAT_TEST_DISK_FREE=BYTES` makes the file system look as
//! if it had BYTES free (for the draws file, at the time it is created),
//! so that tests fill the "disk" without a small file system;
//! `BAT_TEST_FAIL_WRITE=N` makes the N-th block of draws written, and every
//! one after it, fail with an input/output error, as a disk that stops
//! taking writes.

use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// Test switch: pretend the file system has this many bytes free.
pub const DISK_FREE_VAR: &str = "BAT_TEST_DISK_FREE";

/// Test switch: from the N-th block write on, writes fail.
pub const FAIL_WRITE_VAR: &str = "BAT_TEST_FAIL_WRITE";

/// The block write `BAT_TEST_FAIL_WRITE` fails from (1 is the first).
pub(super) fn failing_write() -> Option<u64> {
    std::env::var(FAIL_WRITE_VAR).ok()?.trim().parse().ok()
}

/// The bytes `BAT_TEST_DISK_FREE` says are free, if set.
fn simulated_free() -> Option<u64> {
    std::env::var(DISK_FREE_VAR).ok()?.trim().parse().ok()
}

/// Bytes free for an unprivileged user on the file system holding `dir`.
pub fn free_bytes(dir: &Path) -> io::Result<u64> {
    if let Some(free) = simulated_free() {
        return Ok(free);
    }
    let stats = nix::sys::statvfs::statvfs(dir).map_err(io::Error::from)?;
    Ok((stats.blocks_available() as u64).saturating_mul(stats.fragment_size() as u64))
}

/// Blocks reserved for one file.
pub(super) struct Reservation {
    handle: std::fs::File,
    /// The file's bytes up to here have blocks (or were found free).
    reserved_to: u64,
    /// `fallocate` works on this file system.
    allocates: bool,
    /// The simulated room (`BAT_TEST_DISK_FREE`): the most bytes the file
    /// may take.
    limit: Option<u64>,
}

impl Reservation {
    /// Reservations for the file at `path`, just created.
    pub(super) fn new(path: &Path) -> io::Result<Reservation> {
        let handle = std::fs::OpenOptions::new().write(true).open(path)?;
        let len = handle.metadata()?.len();
        Ok(Reservation {
            handle,
            reserved_to: len,
            allocates: true,
            limit: simulated_free().map(|free| free.saturating_add(len)),
        })
    }

    /// The file's length now.
    pub(super) fn file_len(&self) -> u64 {
        self.handle.metadata().map_or(0, |m| m.len())
    }

    /// Blocks the file holds on disk now.
    pub(super) fn allocated(&self) -> u64 {
        self.handle.metadata().map_or(0, |m| m.blocks() * 512)
    }

    /// Makes sure the file's first `to` bytes have space on disk. Where the
    /// file system cannot reserve blocks, its free space is checked instead.
    pub(super) fn ensure(&mut self, to: u64) -> io::Result<()> {
        if to <= self.reserved_to {
            return Ok(());
        }
        if let Some(limit) = self.limit
            && to > limit
        {
            return Err(io::Error::from_raw_os_error(nix::libc::ENOSPC));
        }
        // A file-size limit (`ulimit -f`) refuses writes past it, but not
        // the reservation of blocks there.
        if let Ok((soft, _)) =
            nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_FSIZE)
            && soft != nix::sys::resource::RLIM_INFINITY
            && to > soft
        {
            return Err(io::Error::from_raw_os_error(nix::libc::EFBIG));
        }
        if self.allocates {
            let length = i64::try_from(to).unwrap_or(i64::MAX);
            let keep_size = nix::fcntl::FallocateFlags::FALLOC_FL_KEEP_SIZE;
            match nix::fcntl::fallocate(&self.handle, keep_size, 0, length) {
                Ok(()) => {
                    self.reserved_to = to;
                    return Ok(());
                }
                Err(nix::errno::Errno::EOPNOTSUPP | nix::errno::Errno::ENOSYS) => {
                    self.allocates = false;
                }
                Err(e) => return Err(e.into()),
            }
        }
        // No reservation: the space the file still needs must be free.
        let needed = to.saturating_sub(self.file_len().max(self.allocated()));
        let free = free_bytes_of(&self.handle)?;
        if needed > free {
            return Err(io::Error::from_raw_os_error(nix::libc::ENOSPC));
        }
        self.reserved_to = to;
        Ok(())
    }

    /// Gives back the blocks reserved past the end of the file.
    pub(super) fn release(&self) {
        let len = self.file_len();
        if self.allocates && self.reserved_to > len {
            let punch = nix::fcntl::FallocateFlags::FALLOC_FL_KEEP_SIZE
                | nix::fcntl::FallocateFlags::FALLOC_FL_PUNCH_HOLE;
            let (Ok(offset), Ok(length)) = (
                i64::try_from(len),
                i64::try_from(self.reserved_to.saturating_sub(len)),
            ) else {
                return;
            };
            let _ = nix::fcntl::fallocate(&self.handle, punch, offset, length);
        }
    }
}

/// Free bytes on the file system of an open file.
fn free_bytes_of(handle: &std::fs::File) -> io::Result<u64> {
    if let Some(free) = simulated_free() {
        return Ok(free);
    }
    let stats = nix::sys::statvfs::fstatvfs(handle).map_err(io::Error::from)?;
    Ok((stats.blocks_available() as u64).saturating_mul(stats.fragment_size() as u64))
}

/// What an operating-system error of a write means for the user, when it
/// is one of the ways a disk refuses writes.
pub fn refusal_in_words(errno: i32) -> Option<&'static str> {
    use nix::libc;
    match errno {
        libc::ENOSPC => Some("the disk is full"),
        libc::EDQUOT => Some("the disk quota is used up"),
        libc::EROFS => Some("the file system is read-only"),
        libc::EFBIG => Some("the file reached the largest size allowed"),
        libc::EIO => Some("the disk reported an input/output error"),
        _ => None,
    }
}

/// The `errno` an HDF5 error message reports (`... errno = 28, ...`).
pub fn errno_in_message(message: &str) -> Option<i32> {
    let rest = &message[message.find("errno = ")? + "errno = ".len()..];
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hdf5_messages_name_their_errno() {
        let message = "H5FD_write(): driver write request failed: file write failed: \
                       time = Mon Dec  7 05:18:13 2026\n, filename = 'x.h5', file descriptor = 3, \
                       errno = 28, error message = 'No space left on device'";
        assert_eq!(errno_in_message(message), Some(28));
        assert_eq!(refusal_in_words(28), Some("the disk is full"));
        assert_eq!(errno_in_message("no number here"), None);
    }
}
