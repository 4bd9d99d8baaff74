//! Lane-by-lane comparisons of the device's gradients with backend-cpu's
//! (shared by `gradient_device` and `ode_device`): the native executor's
//! comparison (a model compiled for both, the points of the lanes, the
//! check of each lane) with the device's closeness.

use backend_cuda::gradient::GradientDevice;
use codegen::gradient::LaneGradient;

use super::device_close;

#[path = "../../../backend-native/tests/common/lanes.rs"]
mod compiled;
// Each test binary uses part of it.
#[allow(unused_imports)]
pub use compiled::{Case, case_from, load, reference, theta};

/// 1e-12 relative on the stub (IEEE arithmetic and the C library's
/// functions on both sides).
pub fn close(a: f64, b: f64) -> bool {
    device_close(a, b, 1e-12)
}

pub fn check_lane(
    at: &str,
    got: &LaneGradient,
    want: &Result<(f64, Vec<f64>), runtime::RuntimeError>,
) -> Result<(), String> {
    compiled::check_lane_by(at, got, want, "device", close)
}

/// Evaluate `points` (one per lane, lanes 0..) on the device and on
/// backend-cpu; return the device's results after checking them.
pub fn compare_points(name: &str, case: &Case, points: &[Vec<f64>]) -> Vec<LaneGradient> {
    compare_points_with(name, case, points).0
}

/// [`compare_points`], with the device's AD stack capacities afterwards.
pub fn compare_points_with(
    name: &str,
    case: &Case,
    points: &[Vec<f64>],
) -> (Vec<LaneGradient>, Vec<usize>) {
    let cpu = reference(case).unwrap();
    let mut device = GradientDevice::new(&case.cfg, case.model.clone(), points.len()).unwrap();
    let got = device.log_density_gradient(points, true).unwrap();
    let want = cpu.log_density_gradient(points, true).unwrap();
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        check_lane(&format!("{name}: lane {i}"), g, w).unwrap_or_else(|e| panic!("{e}"));
    }
    (got, device.stack_capacities().to_vec())
}
