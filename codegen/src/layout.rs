//! Where each value of a program (a gradient program, or one run from an
//! entry function such as the sampler) lives on the device.
//!
//! Lane state is structure-of-arrays: one value per lane per slot,
//! `state[slot * n_lanes + lane]`. The first slots are fixed:
//! [`STATUS_SLOT`] (0 while the lane runs, else why it stopped:
//! [`REJECTED_STATUS`], [`ERROR_STATUS`], [`FATAL_STATUS`]),
//! [`TARGET_SLOT`] (the log density so far), [`SITE_SLOT`] (which failure
//! site stopped the lane), [`PC_SLOT`] (the block the lane runs next, −1
//! when it has finished) and [`JACOBIAN_SLOT`] (1 when log |J| is added).
//! Then come the slots reserved for the host loop ([`Layout::reserved`];
//! programs with external calls keep record and gradient counters there)
//! and, for a program that draws random numbers, the lane's Philox stream
//! ([`Layout::rng`]). For gradient programs the gradient output then the
//! unconstrained input follow ([`ParamSlots`]), then every non-data
//! variable's elements in
//! Stan's order (arrays row-major, matrices column-major), then the AD
//! stacks ([`StackSlots`]), the stacks of variables saved around calls of
//! user functions, and the program-counter stack of return blocks (each
//! [`DEVICE_MAX_CALL_DEPTH`] deep). Data and transformed data are shared by all
//! lanes: `data[k]`.
//!
//! Sizes are fixed when the kernels are generated: a layout is made for
//! one data set, every shape inferred statically (see [`super::typing`]);
//! an int variable that every write sets to the same constant (such as
//! the sampler's `int n = rows(q)`) counts as known, like data.

use std::collections::HashMap;

use language::data::Shape as DataShape;
use language::mir::{Origin, Program, StackId, VarId};
use language::value::Value;
use runtime::ParamLayout;

use super::shape::Shape;

/// Deepest user-function recursion on the device. Every lane's variable
/// and program-counter stacks are this deep in device memory, so it stays
/// below the CPU backends' [`runtime::MAX_CALL_DEPTH`]: at the
/// CPU's depth NUTS's `build_tree_rng`, which saves about 8 vectors per
/// level, would need 10× the per-lane memory for recursion it never
/// reaches (its depth is the tree depth, at most `--max-depth`). A lane
/// nested deeper fails with the interpreter's "recursion too deep" error
/// naming this limit.
pub(crate) const DEVICE_MAX_CALL_DEPTH: usize = 100;
use super::typing::{ShapeEnv, Unsupported};

pub const STATUS_SLOT: usize = 0;
pub const TARGET_SLOT: usize = 1;
pub const SITE_SLOT: usize = 2;
pub const PC_SLOT: usize = 3;
pub const JACOBIAN_SLOT: usize = 4;
const FIRST_FREE_SLOT: usize = 5;
/// Status of a lane whose proposal was rejected (a failed argument check
/// or another domain error: log density −∞).
pub const REJECTED_STATUS: f64 = 1.0;
/// Status of a lane that hit an index out of range.
pub const ERROR_STATUS: f64 = 2.0;
/// Status of a lane that hit an error that stops the run (integer
/// overflow or division by zero, an AD stack overflow).
pub const FATAL_STATUS: f64 = 3.0;

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

/// The parameter transform's slots: gradient output and unconstrained
/// input, `n` each.
#[derive(Clone, Debug)]
pub struct ParamSlots {
    pub n: usize,
    pub gradient: usize,
    pub theta: usize,
    pub params: Vec<ParamLayout>,
}

/// An AD stack of one lane: its depth, then `capacity` values of `elem`.
#[derive(Clone, Debug)]
pub struct StackSlots {
    pub depth: usize,
    pub base: usize,
    pub elem: Shape,
    pub capacity: usize,
}

#[derive(Clone, Debug)]
pub struct Layout {
    vars: HashMap<VarId, (Place, Shape)>,
    names: Vec<String>,
    /// Slots per lane, scratch included (see [`Layout::scratch`]).
    n_slots: std::cell::Cell<usize>,
    pub data: Vec<f64>,
    pub params: Option<ParamSlots>,
    stacks: HashMap<StackId, StackSlots>,
    var_stacks: HashMap<VarId, StackSlots>,
    /// One stack of doubles for every saved variable, in place of
    /// `var_stacks`, when the program's saves nest as call frames
    /// ([`super::save_stack`]).
    pub save_stack: Option<StackSlots>,
    /// The program-counter stack: depth slot and the return blocks.
    pub call_stack: Option<StackSlots>,
    /// The lane's random stream ([`super::rng::RNG_SLOTS`] slots), when
    /// the program draws random numbers.
    pub rng: Option<usize>,
    /// The first of the slots reserved with [`LayoutBuilder::reserve`].
    pub reserved: usize,
    /// Ints that every write sets to the same constant (sizes such as
    /// `int n = rows(q)`), by variable.
    known_ints: HashMap<VarId, i64>,
}

fn is_data(origin: Origin) -> bool {
    matches!(origin, Origin::Data | Origin::TransformedData)
}

fn reals(value: &Value) -> Vec<f64> {
    let mut out = Vec::new();
    value.flatten_reals(&mut out);
    out
}

/// Collects the shapes of a program's values, then assigns slots.
pub struct LayoutBuilder {
    names: Vec<String>,
    shapes: HashMap<VarId, Shape>,
    data_places: HashMap<VarId, (Place, Shape)>,
    data: Vec<f64>,
    params: Option<Vec<ParamLayout>>,
    stacks: HashMap<StackId, (Shape, usize)>,
    saved: Vec<VarId>,
    /// Saves nest as call frames: one save stack.
    frames: bool,
    calls: bool,
    rng: bool,
    reserved: usize,
    known_ints: HashMap<VarId, i64>,
}

impl LayoutBuilder {
    /// Data and transformed data from `globals` (the model's values, by
    /// variable) are placed in the shared data buffer.
    pub fn new(program: &Program, globals: &[Option<Value>]) -> LayoutBuilder {
        let mut data = Vec::new();
        let mut data_places = HashMap::new();
        for (i, info) in program.vars.iter().enumerate() {
            if !is_data(info.origin) {
                continue;
            }
            let Some(value) = globals.get(i).and_then(Option::as_ref) else {
                continue;
            };
            let Some(shape) = Shape::of_value(value).or_else(|| empty_array(value, &info.ty))
            else {
                continue;
            };
            let values = reals(value);
            let place = Place::Data {
                base: data.len(),
                len: values.len(),
            };
            data.extend(values);
            data_places.insert(VarId(i as u32), (place, shape));
        }
        LayoutBuilder {
            names: program.vars.iter().map(|v| v.name.clone()).collect(),
            shapes: HashMap::new(),
            data_places,
            data,
            params: None,
            stacks: HashMap::new(),
            saved: Vec::new(),
            frames: false,
            calls: false,
            rng: false,
            reserved: 0,
            known_ints: HashMap::new(),
        }
    }

    /// The program draws random numbers: each lane keeps a stream.
    pub fn random_stream(&mut self) {
        self.rng = true;
    }

    /// `n` more slots per lane for the host loop's own use
    /// ([`Layout::reserved`]).
    pub fn reserve(&mut self, n: usize) {
        self.reserved += n;
    }

    /// Int variables known to hold one constant; returns whether this
    /// told something new.
    pub fn known_ints(&mut self, known: HashMap<VarId, i64>) -> bool {
        let changed = known != self.known_ints;
        self.known_ints = known;
        changed
    }

    /// `var` is saved around calls (its stack holds up to
    /// [`DEVICE_MAX_CALL_DEPTH`] values).
    pub fn saved(&mut self, var: VarId) {
        if !self.saved.contains(&var) {
            self.saved.push(var);
        }
    }

    /// The saves nest as call frames ([`super::save_stack`]): keep them
    /// on one save stack.
    pub fn save_in_frames(&mut self) {
        self.frames = true;
    }

    /// The program calls user functions (it needs a program-counter stack).
    pub fn calls(&mut self) {
        self.calls = true;
    }

    /// The gradient program's parameters (read by `read_param`, whose
    /// adjoints `param_adjoint` adds to the gradient output).
    pub fn parameters(&mut self, params: &[ParamLayout]) -> Result<(), Unsupported> {
        for p in params {
            let shape = param_shape(&p.shape).ok_or_else(|| {
                format!(
                    "parameter `{}` of type {} (not held by kernels)",
                    p.name, p.shape
                )
            })?;
            self.define(p.var, shape)?;
        }
        self.params = Some(params.to_vec());
        Ok(())
    }

    /// Record that `var` holds values of `shape`; returns whether this is
    /// new. Two different sizes for one variable are an error (an int and
    /// a real value of the same size make it real).
    pub fn define(&mut self, var: VarId, shape: Shape) -> Result<bool, Unsupported> {
        if self.data_places.contains_key(&var) {
            return Ok(false);
        }
        match self.shapes.get_mut(&var) {
            None => {
                self.shapes.insert(var, shape);
                Ok(true)
            }
            Some(known) if known.clone().real() == shape.clone().real() => {
                let changed = known.int && !shape.int;
                known.int &= shape.int;
                Ok(changed)
            }
            Some(known) => Err(format!(
                "`{}` holds values of different sizes ({known} and {shape})",
                self.names[var.0 as usize]
            )),
        }
    }

    /// Record that AD stack `stack` holds values of `shape`; returns
    /// whether this is new.
    pub fn stack(&mut self, stack: StackId, shape: Shape) -> Result<bool, Unsupported> {
        match self.stacks.get(&stack) {
            None => {
                self.stacks.insert(stack, (shape, 0));
                Ok(true)
            }
            Some((known, _)) if known.clone().real() == shape.clone().real() => Ok(false),
            Some((known, _)) => Err(format!(
                "stack {} holds values of different sizes ({known} and {shape})",
                stack.0
            )),
        }
    }

    /// Room for `capacity` values on every lane's AD stack `stack`.
    pub fn stack_capacity(&mut self, stack: StackId, capacity: usize) {
        if let Some((_, c)) = self.stacks.get_mut(&stack) {
            *c = capacity.max(1);
        }
    }

    pub fn finish(self) -> Layout {
        let mut n_slots = FIRST_FREE_SLOT;
        let reserved = n_slots;
        n_slots += self.reserved;
        let rng = self.rng.then(|| {
            let base = n_slots;
            n_slots += super::rng::RNG_SLOTS;
            base
        });
        let params = self.params.map(|params| {
            let n = params.iter().map(|p| p.unconstrained_len).sum::<usize>();
            let gradient = n_slots;
            let theta = gradient + n;
            n_slots = theta + n;
            ParamSlots {
                n,
                gradient,
                theta,
                params,
            }
        });
        let mut vars = self.data_places;
        let mut ids: Vec<&VarId> = self.shapes.keys().collect();
        ids.sort();
        for var in ids {
            let shape = self.shapes[var].clone();
            let len = shape.len();
            vars.insert(*var, (Place::State { base: n_slots, len }, shape));
            n_slots += len;
        }
        let mut stack_ids: Vec<&StackId> = self.stacks.keys().collect();
        stack_ids.sort();
        let mut stacks = HashMap::new();
        for id in stack_ids {
            let (elem, capacity) = self.stacks[id].clone();
            let capacity = capacity.max(1);
            let depth = n_slots;
            let base = depth + 1;
            n_slots = base + capacity * elem.len();
            stacks.insert(
                *id,
                StackSlots {
                    depth,
                    base,
                    elem,
                    capacity,
                },
            );
        }
        let mut saved = self.saved;
        saved.sort();
        let mut var_stacks = HashMap::new();
        let mut save_stack = None;
        if self.frames && !saved.is_empty() {
            // Room for every saved variable DEVICE_MAX_CALL_DEPTH times,
            // as its own stacks would have.
            let capacity: usize = saved
                .iter()
                .filter_map(|v| vars.get(v))
                .map(|(_, elem)| DEVICE_MAX_CALL_DEPTH * elem.len())
                .sum();
            let depth = n_slots;
            n_slots = depth + 1 + capacity;
            save_stack = Some(StackSlots {
                depth,
                base: depth + 1,
                elem: Shape::REAL,
                capacity,
            });
            saved.clear();
        }
        for var in saved {
            let Some((_, elem)) = vars.get(&var).cloned() else {
                continue;
            };
            let depth = n_slots;
            let base = depth + 1;
            n_slots = base + DEVICE_MAX_CALL_DEPTH * elem.len();
            var_stacks.insert(
                var,
                StackSlots {
                    depth,
                    base,
                    elem,
                    capacity: DEVICE_MAX_CALL_DEPTH,
                },
            );
        }
        let call_stack = self.calls.then(|| {
            let depth = n_slots;
            n_slots = depth + 1 + DEVICE_MAX_CALL_DEPTH;
            StackSlots {
                depth,
                base: depth + 1,
                elem: Shape::INT,
                capacity: DEVICE_MAX_CALL_DEPTH,
            }
        });
        Layout {
            vars,
            names: self.names,
            n_slots: std::cell::Cell::new(n_slots),
            data: self.data,
            params,
            stacks,
            var_stacks,
            save_stack,
            call_stack,
            rng,
            reserved,
            known_ints: self.known_ints,
        }
    }
}

fn param_shape(shape: &DataShape) -> Option<Shape> {
    Shape::of_data_shape(shape).map(Shape::real)
}

impl ShapeEnv for LayoutBuilder {
    fn var_shape(&self, var: VarId) -> Option<Shape> {
        self.data_places
            .get(&var)
            .map(|(_, s)| s.clone())
            .or_else(|| self.shapes.get(&var).cloned())
    }

    fn stack_shape(&self, stack: StackId) -> Option<Shape> {
        self.stacks.get(&stack).map(|(s, _)| s.clone())
    }

    fn data_int(&self, var: VarId) -> Option<i64> {
        data_int(&self.data_places, &self.data, var).or_else(|| self.known_ints.get(&var).copied())
    }

    fn var_name(&self, var: VarId) -> String {
        self.names[var.0 as usize].clone()
    }
}

fn data_int(places: &HashMap<VarId, (Place, Shape)>, data: &[f64], var: VarId) -> Option<i64> {
    match places.get(&var)? {
        (Place::Data { base, len: 1 }, shape) if *shape == Shape::INT => Some(data[*base] as i64),
        _ => None,
    }
}

impl ShapeEnv for Layout {
    fn var_shape(&self, var: VarId) -> Option<Shape> {
        self.vars.get(&var).map(|(_, s)| s.clone())
    }

    fn stack_shape(&self, stack: StackId) -> Option<Shape> {
        self.stacks.get(&stack).map(|s| s.elem.clone())
    }

    fn data_int(&self, var: VarId) -> Option<i64> {
        data_int(&self.vars, &self.data, var).or_else(|| self.known_ints.get(&var).copied())
    }

    fn var_name(&self, var: VarId) -> String {
        self.names[var.0 as usize].clone()
    }
}

impl Layout {
    /// Slots per lane.
    pub fn n_slots(&self) -> usize {
        self.n_slots.get()
    }

    /// `len` more slots per lane for an intermediate value too large for a
    /// thread's local memory; returns the first. (Code generation grows
    /// the state as it goes.)
    pub fn scratch(&self, len: usize) -> usize {
        let base = self.n_slots.get();
        self.n_slots.set(base + len);
        base
    }

    pub fn place(&self, var: VarId) -> Option<Place> {
        self.vars.get(&var).map(|(p, _)| *p)
    }

    pub fn stack(&self, stack: StackId) -> Option<&StackSlots> {
        self.stacks.get(&stack)
    }

    /// Every AD stack, by id.
    pub fn stacks(&self) -> impl Iterator<Item = (StackId, &StackSlots)> {
        self.stacks.iter().map(|(id, s)| (*id, s))
    }

    /// The stack of a variable saved around calls.
    pub fn var_stack(&self, var: VarId) -> Option<&StackSlots> {
        self.var_stacks.get(&var)
    }

    /// Every stack whose depth an evaluation starts at 0.
    /// Every stack, in slot order (so that generated code is the same text
    /// from run to run: the native executor caches libraries by it).
    pub fn all_stacks(&self) -> impl Iterator<Item = &StackSlots> {
        let mut all: Vec<&StackSlots> = self
            .stacks
            .values()
            .chain(self.var_stacks.values())
            .chain(self.save_stack.iter())
            .chain(self.call_stack.iter())
            .collect();
        all.sort_by_key(|s| s.depth);
        all.into_iter()
    }
}

/// The shape of an empty one-dimensional array of scalars (such as the
/// `rep_array(0.0, 0)` data arguments of `integrate_ode_*`), which its
/// value alone does not give: its declared element type does.
fn empty_array(value: &Value, ty: &language::types::Type) -> Option<Shape> {
    use language::types::Type;
    match (value, ty.array_dims()) {
        (Value::Array(items), (1, elem @ (Type::Int | Type::Real))) if items.is_empty() => {
            Some(Shape {
                arrays: vec![0],
                ..if *elem == Type::Int {
                    Shape::INT
                } else {
                    Shape::REAL
                }
            })
        }
        _ => None,
    }
}
