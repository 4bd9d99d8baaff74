//! Which CUDA driver the device tests (and the device benchmark's
//! `BAT_BENCH_ALLOW_STUB` path) run against, chosen by one environment
//! variable, [`DEVICE_MODE_VAR`] (`BAT_CUDA_DEVICE`):
//!
//! - unset or empty (the default): `real` when the system's driver has a
//!   real GPU behind it (the issue: "when a real GPU is present, the same
//!   tests run against it"), else `stub`;
//! - `stub` ([`DeviceMode::Stub`]): the stub
//!   libcuda the tests build (`stub/libcuda_stub.c`), whose "device" runs
//!   kernels compiled with g++ against the CUDA-on-CPU shim. Works on any
//!   machine with a C compiler.
//! - `real` ([`DeviceMode::Real`]): the system's CUDA driver and device 0,
//!   kernels compiled with NVRTC. The tests' child processes keep the
//!   inherited library path (no stub directory on it), and
//!   [`require_real_device`] must find a real GPU: a requested real run
//!   fails with the probe's reason, and never falls back to the stub.
//!
//! Tolerances on a real GPU: NVRTC compiles with `--fmad=false`,
//! `--prec-div=true`, `--prec-sqrt=true` and `--ftz=false` (see
//! [`crate::nvrtc`]), so + − × ÷ and √ round as on the CPU (the shim's g++
//! runs with `-ffp-contract=off` likewise). CUDA's `exp`, `log`, `lgamma`,
//! `sin`, ... are not the C library's, though (both are within an ulp or
//! two of exact, not equal), so comparisons that are exact or 1e-12
//! relative against the stub use [`REAL_DEVICE_TOLERANCE`] in real mode.

use std::sync::OnceLock;

use crate::probe::{DeviceInfo, Unavailable, probe};
use crate::stub::STUB_DEVICE_NAME;

/// The environment variable that selects the driver of the device tests.
pub const DEVICE_MODE_VAR: &str = "BAT_CUDA_DEVICE";

/// Relative tolerance (of max(|a|, |b|, 1)) of device-versus-CPU
/// comparisons on a real GPU, where the stub's are exact or 1e-12: one or
/// two ulps of a transcendental function, summed over a few thousand terms
/// with cancellation, stay far below it. Chosen, not yet measured on a GPU.
pub const REAL_DEVICE_TOLERANCE: f64 = 1e-10;

/// The driver the device tests run against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceMode {
    /// The stub libcuda built by the tests (the default).
    Stub,
    /// The system's CUDA driver and a real GPU.
    Real,
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DeviceModeError {
    #[error(
        "{DEVICE_MODE_VAR}={value:?} is not a device mode: expected `stub` (the stub libcuda the \
         tests build), `real` (the system's CUDA driver and GPU) or nothing (the GPU if there is one)"
    )]
    Unknown { value: String },
    #[error("{DEVICE_MODE_VAR}=real asks for a real GPU, but {reason}")]
    NoRealDevice { reason: Unavailable },
    #[error(
        "{DEVICE_MODE_VAR}=real asks for a real GPU, but the CUDA driver found is the tests' stub \
         (`{name}`); take the stub's directory off LD_LIBRARY_PATH"
    )]
    StubFound { name: String },
}

impl DeviceMode {
    /// The mode [`DEVICE_MODE_VAR`] selects; unset, the real GPU when
    /// there is one ([`require_real_device`] succeeds), else the stub.
    pub fn from_env() -> Result<DeviceMode, DeviceModeError> {
        let asked = DeviceMode::parse(std::env::var(DEVICE_MODE_VAR).ok().as_deref())?;
        Ok(asked.unwrap_or_else(DeviceMode::detected))
    }

    /// The mode a value of [`DEVICE_MODE_VAR`] asks for (`None`: unset or
    /// empty, which [`DeviceMode::from_env`] resolves by probing).
    pub fn parse(value: Option<&str>) -> Result<Option<DeviceMode>, DeviceModeError> {
        match value {
            None | Some("") => Ok(None),
            Some("stub") => Ok(Some(DeviceMode::Stub)),
            Some("real") => Ok(Some(DeviceMode::Real)),
            Some(other) => Err(DeviceModeError::Unknown {
                value: other.to_string(),
            }),
        }
    }

    /// `Real` when the system's driver has a real GPU behind it (not the
    /// tests' stub), else `Stub`.
    pub fn detected() -> DeviceMode {
        if require_real_device().is_ok() {
            DeviceMode::Real
        } else {
            DeviceMode::Stub
        }
    }
}

/// Device 0 of the system's driver, which must be a real GPU (not the
/// stub). Probes once per process: the probe swaps the panic hook, which
/// concurrent tests must not do at the same time.
pub fn require_real_device() -> Result<DeviceInfo, DeviceModeError> {
    static PROBED: OnceLock<Result<DeviceInfo, Unavailable>> = OnceLock::new();
    let info = PROBED
        .get_or_init(probe)
        .clone()
        .map_err(|reason| DeviceModeError::NoRealDevice { reason })?;
    if info.name == STUB_DEVICE_NAME {
        return Err(DeviceModeError::StubFound { name: info.name });
    }
    Ok(info)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mode_is_what_is_asked_for_or_detected() {
        assert_eq!(DeviceMode::parse(None), Ok(None));
        assert_eq!(DeviceMode::parse(Some("")), Ok(None));
        assert_eq!(DeviceMode::parse(Some("stub")), Ok(Some(DeviceMode::Stub)));
        assert_eq!(DeviceMode::parse(Some("real")), Ok(Some(DeviceMode::Real)));
        // Unset: the stub wherever there is no CUDA driver library at all
        // (this project's build machines), else the GPU exactly when the
        // driver has a device that is not the tests' stub.
        if crate::probe::driver_library_present() {
            let real = probe().is_ok_and(|info| info.name != STUB_DEVICE_NAME);
            assert_eq!(DeviceMode::detected() == DeviceMode::Real, real);
        } else {
            assert_eq!(DeviceMode::detected(), DeviceMode::Stub);
        }
        let error = DeviceMode::parse(Some("gpu")).unwrap_err();
        assert_eq!(
            error.to_string(),
            "BAT_CUDA_DEVICE=\"gpu\" is not a device mode: expected `stub` (the stub libcuda the \
             tests build), `real` (the system's CUDA driver and GPU) or nothing (the GPU if there is one)"
        );
    }
}
