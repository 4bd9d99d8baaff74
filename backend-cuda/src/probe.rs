//! Is there a CUDA driver and a device? Asked before anything else touches
//! cudarc, because cudarc panics when libcuda cannot be loaded.

use std::panic::{AssertUnwindSafe, catch_unwind};

use cudarc::driver::{result, sys};

/// What `bat` prints when the CUDA backend cannot run on this machine.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Unavailable {
    #[error("no CUDA driver found; use --backend cpu")]
    NoDriver,
    #[error("CUDA driver found but no CUDA device is available ({detail}); use --backend cpu")]
    NoDevice { detail: String },
    #[error("the CUDA driver failed: {detail}; use --backend cpu")]
    DriverFailed { detail: String },
}

/// The device the backend will run on (ordinal 0).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    pub name: String,
    pub compute_capability: (i32, i32),
    pub device_count: i32,
    /// Peak memory clock in kHz (`CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE`).
    pub memory_clock_khz: i32,
    /// Global memory bus width in bits
    /// (`CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH`).
    pub memory_bus_bits: i32,
}

impl DeviceInfo {
    /// The NVRTC architecture to compile for, e.g. `sm_90`.
    pub fn sm_arch(&self) -> String {
        format!(
            "sm_{}{}",
            self.compute_capability.0, self.compute_capability.1
        )
    }

    /// Theoretical peak memory bandwidth in bytes per second: two
    /// transfers per memory clock (double data rate) over the bus, as CUDA's
    /// `deviceQuery` sample computes it. `None` when the driver does not
    /// report the clock or the bus width.
    pub fn peak_memory_bandwidth(&self) -> Option<f64> {
        (self.memory_clock_khz > 0 && self.memory_bus_bits > 0)
            .then(|| 2.0 * self.memory_clock_khz as f64 * 1e3 * self.memory_bus_bits as f64 / 8.0)
    }
}

/// Whether a CUDA driver library (libcuda) can be loaded at all.
pub fn driver_library_present() -> bool {
    // SAFETY: only tries to dlopen libcuda under its usual names.
    unsafe { sys::is_culib_present() }
}

/// Find the CUDA driver and device 0. Never panics.
pub fn probe() -> Result<DeviceInfo, Unavailable> {
    if !driver_library_present() {
        return Err(Unavailable::NoDriver);
    }
    // A driver library missing one of the symbols cudarc looks up makes cudarc
    // panic; report that as a driver failure rather than crashing (and keep
    // the default hook from printing the panic meanwhile).
    let previous_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let outcome = catch_unwind(AssertUnwindSafe(probe_loaded_driver));
    std::panic::set_hook(previous_hook);
    outcome.unwrap_or_else(|panic| {
        let detail = panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "unknown error".to_string());
        Err(Unavailable::DriverFailed { detail })
    })
}

fn probe_loaded_driver() -> Result<DeviceInfo, Unavailable> {
    let no_device = |call: &str, e: result::DriverError| {
        let code = e.0;
        let detail = format!("{call}: {code:?}");
        if code == sys::CUresult::CUDA_ERROR_NO_DEVICE {
            Unavailable::NoDevice { detail }
        } else {
            Unavailable::DriverFailed { detail }
        }
    };
    result::init().map_err(|e| no_device("cuInit", e))?;
    let device_count = result::device::get_count().map_err(|e| no_device("cuDeviceGetCount", e))?;
    if device_count < 1 {
        return Err(Unavailable::NoDevice {
            detail: "cuDeviceGetCount: 0 devices".to_string(),
        });
    }
    let device = result::device::get(0).map_err(|e| no_device("cuDeviceGet", e))?;
    let name = result::device::get_name(device).map_err(|e| no_device("cuDeviceGetName", e))?;
    let attribute = |attribute| {
        // SAFETY: `device` is a valid device handle returned by cuDeviceGet.
        unsafe { result::device::get_attribute(device, attribute) }
            .map_err(|e| no_device("cuDeviceGetAttribute", e))
    };
    use sys::CUdevice_attribute::*;
    let major = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?;
    let minor = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?;
    Ok(DeviceInfo {
        name,
        compute_capability: (major, minor),
        device_count,
        // Only the benchmark uses these: a driver without them still runs.
        memory_clock_khz: attribute(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE).unwrap_or(0),
        memory_bus_bits: attribute(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH).unwrap_or(0),
    })
}
