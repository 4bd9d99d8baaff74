//! Where each variable of a gradient program lives on the device.
//!
//! Lane state (one value per lane per slot, `state[slot * n_lanes + lane]`):
//! slot [`STATUS_SLOT`] (0 while the lane runs, [`REJECTED_STATUS`] after
//! a failed argument check rejected the proposal, [`ERROR_STATUS`] after an
//! error such as an index out of range), [`TARGET_SLOT`] (the log density
//! accumulated so far), then every non-data variable's elements in Stan's
//! order (arrays row-major, matrices column-major). Data and transformed
//! data are shared by all lanes: `data[k]`.
//!
//! Sizes are fixed when the kernels are generated: a layout is made for one
//! data set, from the values the interpreter computed for one lane.

use std::collections::HashMap;

use language::interp::GradFrame;
use language::mir::{Origin, Program, VarId};
use language::value::Value;

pub const STATUS_SLOT: usize = 0;
pub const TARGET_SLOT: usize = 1;
/// Status of a lane whose proposal was rejected (log density −∞).
pub const REJECTED_STATUS: f64 = 1.0;
/// Status of a lane that hit an error (e.g. an index out of range).
pub const ERROR_STATUS: f64 = 2.0;
const FIRST_VAR_SLOT: usize = 2;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// Per-lane: slots `base .. base + len`.
    State { base: usize, len: usize },
    /// Shared: `data[base .. base + len]`.
    Data { base: usize, len: usize },
}

impl Place {
    /// Number of elements.
    pub fn size(self) -> usize {
        match self {
            Place::State { len, .. } | Place::Data { len, .. } => len,
        }
    }
}

#[derive(Clone, Debug)]
pub struct Layout {
    places: HashMap<VarId, Place>,
    pub n_slots: usize,
    pub data: Vec<f64>,
}

fn is_data(origin: Origin) -> bool {
    matches!(origin, Origin::Data | Origin::TransformedData)
}

/// Whether a value is made of reals (or ints) only: what the kernels hold.
fn is_real_valued(value: &Value) -> bool {
    match value {
        Value::Int(_)
        | Value::Real(_)
        | Value::Vector(_)
        | Value::RowVector(_)
        | Value::Matrix { .. } => true,
        Value::Array(items) => items.iter().all(is_real_valued),
        _ => false,
    }
}

fn reals(value: &Value) -> Vec<f64> {
    let mut out = Vec::new();
    value.flatten_reals(&mut out);
    out
}

impl Layout {
    /// Place every variable that has a real-valued value in `frame`
    /// (variables without one cannot be used by generated kernels).
    pub fn from_frame(program: &Program, frame: &GradFrame) -> Layout {
        let mut places = HashMap::new();
        let mut n_slots = FIRST_VAR_SLOT;
        let mut data = Vec::new();
        for (i, value) in frame.values.iter().enumerate() {
            let Some(value) = value.as_ref().filter(|v| is_real_valued(v)) else {
                continue;
            };
            let var = VarId(i as u32);
            let values = reals(value);
            let len = values.len();
            let place = if is_data(program.vars[i].origin) {
                let base = data.len();
                data.extend(values);
                Place::Data { base, len }
            } else {
                let base = n_slots;
                n_slots += len;
                Place::State { base, len }
            };
            places.insert(var, place);
        }
        Layout {
            places,
            n_slots,
            data,
        }
    }

    pub fn place(&self, var: VarId) -> Option<Place> {
        self.places.get(&var).copied()
    }

    /// This lane's slot values for `frame` (`n_slots` values; status 0,
    /// target from the frame, variables without a value NaN).
    pub fn lane_slots(&self, frame: &GradFrame) -> Vec<f64> {
        let mut slots = vec![f64::NAN; self.n_slots];
        slots[STATUS_SLOT] = 0.0;
        slots[TARGET_SLOT] = frame.target;
        for (&var, &place) in &self.places {
            if let Place::State { base, len } = place
                && let Some(value) = &frame.values[var.0 as usize]
            {
                let values = reals(value);
                if values.len() == len {
                    slots[base..base + len].copy_from_slice(&values);
                }
            }
        }
        slots
    }
}
