//! Lane values to size and test kernels with: the interpreter's gradient
//! frames at Stan-style random initial points.

use language::batch::pc;
use runtime::{GradFrame, Model, RuntimeError};

/// A lane: its unconstrained point and the interpreter's frame there.
pub struct Lane {
    pub theta: Vec<f64>,
    pub frame: GradFrame,
}

/// Points uniform in (-2, 2) like Stan's default inits, from a fixed
/// seed (SplitMix64), so that runs are reproducible.
fn points(n_params: usize, seed: u64) -> impl Iterator<Item = Vec<f64>> {
    let mut state = seed;
    std::iter::repeat_with(move || {
        (0..n_params)
            .map(|_| {
                state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
                let mut z = state;
                z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
                z ^= z >> 31;
                let unit = (z >> 11) as f64 / (1u64 << 53) as f64;
                4.0 * unit - 2.0
            })
            .collect()
    })
}

/// Up to `want` lanes whose whole gradient program (the PC program `p`
/// built from it) runs, trying at most
/// `4 * want + 16` points; the last error if none does.
pub fn lanes(
    model: &Model,
    p: &pc::Program,
    want: usize,
    seed: u64,
) -> Result<Vec<Lane>, RuntimeError> {
    let mut found = Vec::new();
    let mut last_error = None;
    for theta in points(model.num_unconstrained(), seed).take(4 * want + 16) {
        match model.gradient_frame_pc(p, &theta, true) {
            Ok(frame) => found.push(Lane { theta, frame }),
            Err(e) => last_error = Some(e),
        }
        if found.len() == want {
            break;
        }
    }
    match (found.is_empty(), last_error) {
        (true, Some(e)) => Err(e),
        _ => Ok(found),
    }
}

/// The deepest each AD stack of `p` gets over `lanes`, with room to spare:
/// twice that plus 16 (a lane that needs more fails with a stack overflow
/// and the executor regrows the stacks).
pub fn stack_capacities(p: &pc::Program, lanes: &[Lane]) -> Vec<usize> {
    (0..p.num_ad_stacks as usize)
        .map(|s| {
            let deepest = lanes
                .iter()
                .map(|l| l.frame.stack_depths.get(s).copied().unwrap_or(0))
                .max()
                .unwrap_or(0);
            2 * deepest + 16
        })
        .collect()
}
