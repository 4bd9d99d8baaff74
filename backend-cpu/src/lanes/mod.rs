//! Storage for a batch of Z lanes (chains) in structure-of-arrays layout.
//!
//! A variable's value for all lanes of a batch is a [`Slot`]:
//! - [`Slot::Shared`]: one value for every lane — data, transformed data,
//!   constants, and whatever is computed from them alone (pfor §4.3:
//!   invariant values are computed once);
//! - [`Slot::Real`] / [`Slot::Int`]: a [`Dense`] block, one element shape
//!   for all lanes, laid out `[element][lane]`: element `e` of lane `l` is
//!   `data[e * z + l]`, so each element's Z lanes are contiguous.
//!   Elementwise kernels are loops over contiguous lanes, and a vector
//!   `[D][Z]` is a column-major D×Z matrix — shared X (N×D) times it is one
//!   GEMM giving `[N][Z]`;
//! - [`Slot::Tuple`]: a tuple whose components are slots of their own, so
//!   a tuple of dense values (the sampler's tree state, a gradient's
//!   `(lp, grad)`) stays dense and a projection is free;
//! - [`Slot::PerLane`]: one [`Value`] per lane, for what is ragged
//!   (complex values, shapes that differ between lanes, arrays of tuples).
//!
//! # Invariants
//! - A non-shared slot always holds all Z lanes of its batch. Lanes that
//!   were not active when it was written hold unspecified (but
//!   well-formed) values; only active lanes are ever read as results.
//! - Elements are in Stan's order ([`Value::flatten_reals`]): arrays
//!   row-major over their dimensions, matrices column-major.
//! - A `Dense` real shape has only real leaves (real, vector, row vector,
//!   matrix, arrays of them); a `Dense` int shape is an int or an (nested)
//!   int array.
//! - [`Slot::lane_value`] of any slot is exactly the [`Value`] the scalar
//!   interpreter holds for that lane.

mod laneset;
pub mod pool;
mod state;

pub use laneset::Lanes;
pub use state::{Footprint, LaneStatus, State};

use language::data::Shape;
use language::value::Value;
use std::sync::Arc;

/// One element shape for all lanes, `[element][lane]`.
#[derive(Debug, PartialEq)]
pub struct Dense<T: Copy + 'static> {
    pub shape: Shape,
    pub z: usize,
    pub data: Vec<T>,
    /// Elements per lane (`shape.num_reals()`, cached).
    n: usize,
}

impl<T: Copy + 'static> Clone for Dense<T> {
    fn clone(&self) -> Dense<T> {
        // Reals and ints are copied into pooled buffers (no allocation
        // for the type dispatch either: `Any` on references).
        let mut data: Option<Vec<T>> = None;
        let out = &mut data as &mut dyn std::any::Any;
        let copied = &self.data as &dyn std::any::Any;
        if let (Some(out), Some(xs)) = (
            out.downcast_mut::<Option<Vec<f64>>>(),
            copied.downcast_ref::<Vec<f64>>(),
        ) {
            *out = Some(pool::copy(xs));
        } else if let (Some(out), Some(xs)) = (
            out.downcast_mut::<Option<Vec<i64>>>(),
            copied.downcast_ref::<Vec<i64>>(),
        ) {
            *out = Some(pool::copy(xs));
        }
        Dense {
            shape: self.shape.clone(),
            z: self.z,
            data: data.unwrap_or_else(|| self.data.clone()),
            n: self.n,
        }
    }
}

impl<T: Copy + 'static> Drop for Dense<T> {
    fn drop(&mut self) {
        let data = &mut self.data as &mut dyn std::any::Any;
        if let Some(reals) = data.downcast_mut::<Vec<f64>>() {
            pool::recycle(std::mem::take(reals));
        } else if let Some(ints) = data.downcast_mut::<Vec<i64>>() {
            pool::recycle(std::mem::take(ints));
        }
    }
}

impl<T: Copy + 'static> Dense<T> {
    pub fn new(shape: Shape, z: usize, data: Vec<T>) -> Dense<T> {
        let n = shape.num_reals();
        assert_eq!(data.len(), n * z, "dense block of the wrong size");
        Dense { shape, z, data, n }
    }

    pub fn filled(shape: Shape, z: usize, x: T) -> Dense<T> {
        let n = shape.num_reals() * z;
        Dense::new(shape, z, vec![x; n])
    }

    /// Number of elements of one lane's value.
    pub fn elements(&self) -> usize {
        self.n
    }

    /// Element `e` of every lane.
    pub fn element(&self, e: usize) -> &[T] {
        &self.data[e * self.z..(e + 1) * self.z]
    }

    pub fn element_mut(&mut self, e: usize) -> &mut [T] {
        &mut self.data[e * self.z..(e + 1) * self.z]
    }

    /// Lane `l`'s elements in order.
    pub fn lane(&self, l: usize) -> impl Iterator<Item = T> + '_ {
        self.data.iter().skip(l).step_by(self.z).copied()
    }

    /// Copy lanes `lanes` of `src` (same shape and Z) into `self`.
    pub fn copy_lanes(&mut self, src: &Dense<T>, lanes: &[usize]) {
        let z = self.z;
        if self.elements() > 1 && 4 * lanes.len() >= z {
            // Many lanes: a select over every lane of an element (no
            // index per lane, no bounds checks) is cheaper.
            let mut take = vec![false; z];
            for &l in lanes {
                take[l] = true;
            }
            for (dst, from) in self.data.chunks_exact_mut(z).zip(src.data.chunks_exact(z)) {
                for ((d, &f), &t) in dst.iter_mut().zip(from).zip(&take) {
                    *d = if t { f } else { *d };
                }
            }
            return;
        }
        for e in 0..self.elements() {
            let dst = &mut self.data[e * z..(e + 1) * z];
            let from = &src.data[e * z..(e + 1) * z];
            for &l in lanes {
                dst[l] = from[l];
            }
        }
    }

    /// Copy lane `from` of `src` (same shape) into lane `to` of `self`.
    pub fn copy_lane(&mut self, to: usize, src: &Dense<T>, from: usize) {
        for e in 0..self.elements() {
            self.data[e * self.z + to] = src.data[e * src.z + from];
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Slot {
    /// Cheap to clone: data such as a design matrix is never copied.
    Shared(Arc<Value>),
    Real(Dense<f64>),
    Int(Dense<i64>),
    /// Components in order (never all shared: that is a shared tuple).
    Tuple(Vec<Arc<Slot>>),
    PerLane(Vec<Value>),
}

impl Slot {
    pub fn shared(v: Value) -> Slot {
        Slot::Shared(Arc::new(v))
    }

    pub fn is_shared(&self) -> bool {
        matches!(self, Slot::Shared(_))
    }

    /// A tuple of component slots: shared when every component is.
    pub fn tuple(items: Vec<Arc<Slot>>) -> Slot {
        if items.iter().all(|i| i.is_shared()) {
            return Slot::shared(Value::Tuple(
                items.iter().map(|i| i.lane_value(0)).collect(),
            ));
        }
        Slot::Tuple(items)
    }

    /// The value of lane `l`, as the interpreter holds it.
    pub fn lane_value(&self, l: usize) -> Value {
        match self {
            Slot::Shared(v) => (**v).clone(),
            Slot::Real(d) => build_real(&d.shape, &mut d.lane(l)),
            Slot::Int(d) => build_int(&d.shape, &mut d.lane(l)),
            Slot::Tuple(items) => Value::Tuple(items.iter().map(|i| i.lane_value(l)).collect()),
            Slot::PerLane(vs) => vs[l].clone(),
        }
    }

    /// A slot from one value per lane (`values.len()` is Z): dense when
    /// every lane has the same dense-able shape and kind.
    pub fn from_lane_values(values: Vec<Value>) -> Slot {
        let z = values.len();
        let Some(first) = values.first() else {
            return Slot::PerLane(values);
        };
        if let Value::Tuple(items) = first {
            let k = items.len();
            if values
                .iter()
                .all(|v| matches!(v, Value::Tuple(items) if items.len() == k))
            {
                return tuple_from_lane_values(values, k);
            }
            return Slot::PerLane(values);
        }
        let Some((shape, is_int)) = dense_shape(first) else {
            return Slot::PerLane(values);
        };
        let same = values.iter().all(|v| has_dense_shape(v, &shape, is_int));
        if !same {
            return Slot::PerLane(values);
        }
        let n = shape.num_reals();
        if is_int {
            let mut data = pool::filled(n * z, 0i64);
            for (l, v) in values.iter().enumerate() {
                let mut e = 0;
                for_each_int(v, &mut |i| {
                    data[e * z + l] = i;
                    e += 1;
                });
            }
            Slot::Int(Dense::new(shape, z, data))
        } else {
            let mut data = pool::filled(n * z, 0.0);
            let mut flat = Vec::with_capacity(n);
            for (l, v) in values.iter().enumerate() {
                flat.clear();
                v.flatten_reals(&mut flat);
                for (e, x) in flat.iter().enumerate() {
                    data[e * z + l] = *x;
                }
            }
            Slot::Real(Dense::new(shape, z, data))
        }
    }

    /// Every lane's value (Z of them), e.g. to go per lane.
    pub fn to_lane_values(&self, z: usize) -> Vec<Value> {
        match self {
            Slot::PerLane(vs) => vs.clone(),
            other => (0..z).map(|l| other.lane_value(l)).collect(),
        }
    }

    /// The slot as all Z lanes of its own (a shared value repeated).
    pub fn broadcast(&self, z: usize) -> Slot {
        match self {
            Slot::Shared(v) => match dense_shape(v) {
                Some((shape, false)) => {
                    let mut flat = Vec::new();
                    v.flatten_reals(&mut flat);
                    let mut data = pool::buffer(flat.len() * z);
                    for x in flat {
                        data.extend(std::iter::repeat_n(x, z));
                    }
                    Slot::Real(Dense::new(shape, z, data))
                }
                Some((shape, true)) => {
                    let mut data = Vec::new();
                    for_each_int(v, &mut |i| data.extend(std::iter::repeat_n(i, z)));
                    Slot::Int(Dense::new(shape, z, data))
                }
                None => Slot::from_lane_values(vec![(**v).clone(); z]),
            },
            other => other.clone(),
        }
    }

    /// Write the active lanes of `new` (a slot over the same Z lanes) into
    /// `self`, leaving the other lanes as they are (a masked update).
    pub fn merge(&mut self, new: Slot, active: &Lanes) {
        if active.is_full() {
            *self = new;
        } else {
            self.copy_lanes_from(&new, active);
        }
    }

    /// Copy lanes `lanes` of `src` (a slot over the same Z lanes) into
    /// `self`; the other lanes keep their values. Dense storage of one
    /// shape stays dense (element by element over the lanes).
    pub fn copy_lanes_from(&mut self, src: &Slot, lanes: &Lanes) {
        if lanes.is_empty() {
            return;
        }
        if lanes.is_full() {
            *self = src.clone();
            return;
        }
        let z = lanes.z();
        match (&mut *self, src) {
            (Slot::Real(a), Slot::Real(b)) if a.shape == b.shape => {
                return a.copy_lanes(b, lanes.indices());
            }
            (Slot::Int(a), Slot::Int(b)) if a.shape == b.shape => {
                return a.copy_lanes(b, lanes.indices());
            }
            (Slot::Shared(a), Slot::Shared(b)) if a == b => return,
            (Slot::Tuple(a), Slot::Tuple(b)) if a.len() == b.len() => {
                for (a, b) in a.iter_mut().zip(b) {
                    Arc::make_mut(a).copy_lanes_from(b, lanes);
                }
                return;
            }
            (Slot::Real(_) | Slot::Int(_) | Slot::Tuple(_), Slot::Shared(_)) => {
                let spread = src.broadcast(z);
                if !matches!(spread, Slot::PerLane(_)) {
                    return self.copy_lanes_from(&spread, lanes);
                }
            }
            (Slot::Shared(_), Slot::Real(_) | Slot::Int(_) | Slot::Tuple(_)) => {
                let spread = self.broadcast(z);
                if !matches!(spread, Slot::PerLane(_)) {
                    *self = spread;
                    return self.copy_lanes_from(src, lanes);
                }
            }
            _ => {}
        }
        let mut values = self.to_lane_values(z);
        for l in lanes.iter() {
            values[l] = src.lane_value(l);
        }
        *self = Slot::from_lane_values(values);
    }

    /// Write lanes `lanes` of `new` (a slot over the same Z lanes) into
    /// `*old`, the other lanes keeping their values: a variable's masked
    /// update. When `old`'s storage is held elsewhere too (it would be
    /// cloned whole first) and most lanes are written, `new`'s storage
    /// becomes the variable's and only the lanes *not* written are copied
    /// into it from `old`.
    pub fn merge_lanes(old: &mut Arc<Slot>, new: Arc<Slot>, lanes: &Lanes) {
        if lanes.is_empty() {
            return;
        }
        if lanes.is_full() {
            *old = new;
            return;
        }
        let mut others = None;
        merge_into(old, new, lanes, &mut others);
    }

    /// Lane `l`'s truth as a condition (non-zero, the interpreter's
    /// rule) read in place when this is a dense int or real scalar;
    /// `None` for any other slot (the caller asks the interpreter).
    pub fn scalar_truth(&self, l: usize) -> Option<bool> {
        match self {
            Slot::Int(d) if d.elements() == 1 => Some(d.data[l] != 0),
            Slot::Real(d) if d.elements() == 1 => Some(d.data[l] != 0.0),
            _ => None,
        }
    }

    /// Number of lanes of a non-shared slot.
    pub fn z(&self) -> Option<usize> {
        match self {
            Slot::Shared(_) => None,
            Slot::Real(d) => Some(d.z),
            Slot::Int(d) => Some(d.z),
            Slot::Tuple(items) => items.iter().find_map(|i| i.z()),
            Slot::PerLane(vs) => Some(vs.len()),
        }
    }
}

/// [`Slot::merge_lanes`] for `lanes` (neither empty nor full); `others`
/// caches the lanes not in `lanes`.
fn merge_into(
    old: &mut Arc<Slot>,
    mut new: Arc<Slot>,
    lanes: &Lanes,
    others: &mut Option<Vec<usize>>,
) {
    if Arc::ptr_eq(old, &new) {
        return;
    }
    let z = lanes.z();
    // When `old` is the variable's alone, the lanes are written into it in
    // place even when most lanes are written: taking `new`'s storage then
    // was measured slower (eight schools, 512 chains × (50 + 50), one
    // thread: 4.59 s against 4.32 s CPU, best of four).
    // When `old` is not ours alone, one is copied whole anyway: `new`'s
    // storage is taken and the other lanes copied into it when it has
    // most of the lanes; otherwise `old` is copied (one memcpy) and the
    // few written lanes with it — cheaper than a select over every lane
    // even when `new` is a temporary nobody else holds (eight schools,
    // 1024 chains × (100 + 100), one thread: 4.90 s → 4.74 s user CPU,
    // three alternations).
    let reuse_new =
        Arc::get_mut(old).is_none() && 2 * lanes.len() > z && same_dense_shape(old, &new);
    if reuse_new {
        let others = others.get_or_insert_with(|| {
            let mask = lanes.mask();
            (0..z).filter(|&l| !mask[l]).collect()
        });
        match (Arc::make_mut(&mut new), &**old) {
            (Slot::Real(a), Slot::Real(b)) => a.copy_lanes(b, others),
            (Slot::Int(a), Slot::Int(b)) => a.copy_lanes(b, others),
            _ => unreachable!("checked by same_dense_shape"),
        }
        *old = new;
        return;
    }
    // Component by component (cloning a shared tuple copies only its
    // component handles; once `new` is gone, its components are held
    // only here).
    let items = match (&**old, &*new) {
        (Slot::Tuple(a), Slot::Tuple(b)) if a.len() == b.len() => Some(b.clone()),
        _ => None,
    };
    if let Some(items) = items {
        drop(new);
        if let Slot::Tuple(olds) = Arc::make_mut(old) {
            for (o, n) in olds.iter_mut().zip(items) {
                merge_into(o, n, lanes, others);
            }
        }
        return;
    }
    Arc::make_mut(old).copy_lanes_from(&new, lanes);
}

/// Both are dense of one shape and Z.
fn same_dense_shape(a: &Slot, b: &Slot) -> bool {
    match (a, b) {
        (Slot::Real(a), Slot::Real(b)) => a.shape == b.shape && a.z == b.z,
        (Slot::Int(a), Slot::Int(b)) => a.shape == b.shape && a.z == b.z,
        _ => false,
    }
}

/// A dense tuple slot from per-lane tuples of `k` components each.
fn tuple_from_lane_values(values: Vec<Value>, k: usize) -> Slot {
    let z = values.len();
    let mut columns: Vec<Vec<Value>> = (0..k).map(|_| Vec::with_capacity(z)).collect();
    for v in values {
        if let Value::Tuple(items) = v {
            for (col, item) in columns.iter_mut().zip(items) {
                col.push(item);
            }
        }
    }
    Slot::Tuple(
        columns
            .into_iter()
            .map(|col| Arc::new(Slot::from_lane_values(col)))
            .collect(),
    )
}

/// The element shape and kind (true: ints) of a value that can be dense.
pub fn dense_shape(v: &Value) -> Option<(Shape, bool)> {
    Some(match v {
        Value::Int(_) => (Shape::Int, true),
        Value::Real(_) => (Shape::Real, false),
        Value::Vector(x) => (Shape::Vector(x.len()), false),
        Value::RowVector(x) => (Shape::RowVector(x.len()), false),
        Value::Matrix { rows, cols, .. } => (Shape::Matrix(*rows, *cols), false),
        Value::Array(items) => {
            // An empty array's element type is unknown: keep it per lane.
            let (elem, is_int) = dense_shape(items.first()?)?;
            if !items[1..]
                .iter()
                .all(|item| has_dense_shape(item, &elem, is_int))
            {
                return None;
            }
            (Shape::Array(items.len(), Box::new(elem)), is_int)
        }
        _ => return None,
    })
}

/// `dense_shape(v) == Some((shape, is_int))`, without building shapes: a
/// shared array of N numbers is checked once per operation that reads it,
/// so at one lane building and comparing N shapes cost more than the
/// arithmetic.
fn has_dense_shape(v: &Value, shape: &Shape, is_int: bool) -> bool {
    match (v, shape) {
        (Value::Int(_), Shape::Int) => is_int,
        (Value::Real(_), Shape::Real) => !is_int,
        (Value::Vector(x), Shape::Vector(n)) | (Value::RowVector(x), Shape::RowVector(n)) => {
            !is_int && x.len() == *n
        }
        (Value::Matrix { rows, cols, .. }, Shape::Matrix(r, c)) => {
            !is_int && (rows, cols) == (r, c)
        }
        (Value::Array(items), Shape::Array(n, elem)) => {
            !items.is_empty()
                && items.len() == *n
                && items.iter().all(|item| has_dense_shape(item, elem, is_int))
        }
        _ => false,
    }
}

fn for_each_int(v: &Value, f: &mut dyn FnMut(i64)) {
    match v {
        Value::Int(i) => f(*i),
        Value::Array(items) => items.iter().for_each(|i| for_each_int(i, f)),
        _ => {}
    }
}

/// A real-leaved value of `shape` from its elements in order.
///
/// Generic over the iterator, not `dyn`: a kept draw builds every variable
/// of every lane, and a virtual call per number (and per closure) cost
/// ~400 instructions a variable.
pub fn build_real<I: Iterator<Item = f64>>(shape: &Shape, xs: &mut I) -> Value {
    let mut take = |n: usize| -> Vec<f64> { xs.by_ref().take(n).collect() };
    match shape {
        Shape::Vector(n) => Value::Vector(take(*n)),
        Shape::RowVector(n) => Value::RowVector(take(*n)),
        Shape::Matrix(r, c) => Value::Matrix {
            rows: *r,
            cols: *c,
            data: take(r * c),
        },
        // An array of reals in one pass (no call per element).
        Shape::Array(n, elem) if **elem == Shape::Real => {
            let mut items: Vec<Value> = xs.by_ref().take(*n).map(Value::Real).collect();
            items.resize(*n, Value::Real(f64::NAN));
            Value::Array(items)
        }
        Shape::Array(n, elem) => Value::Array((0..*n).map(|_| build_real(elem, xs)).collect()),
        _ => Value::Real(xs.next().unwrap_or(f64::NAN)),
    }
}

/// An int or int array of `shape` from its ints in order.
pub fn build_int<I: Iterator<Item = i64>>(shape: &Shape, xs: &mut I) -> Value {
    match shape {
        Shape::Array(n, elem) if **elem == Shape::Int => {
            let mut items: Vec<Value> = xs.by_ref().take(*n).map(Value::Int).collect();
            items.resize(*n, Value::Int(0));
            Value::Array(items)
        }
        Shape::Array(n, elem) => Value::Array((0..*n).map(|_| build_int(elem, xs)).collect()),
        _ => Value::Int(xs.next().unwrap_or(0)),
    }
}

impl<T: Copy + 'static> Dense<T> {
    /// Lanes `lanes` of `self`, as a batch of `lanes.len()`.
    pub fn gather(&self, lanes: &[usize]) -> Dense<T> {
        let k = lanes.len();
        let mut data = Vec::with_capacity(self.elements() * k);
        for e in 0..self.elements() {
            let col = self.element(e);
            data.extend(lanes.iter().map(|&l| col[l]));
        }
        Dense::new(self.shape.clone(), k, data)
    }

    /// Write the lanes of `sub` (a gathered batch) back to lanes `lanes`.
    pub fn scatter(&mut self, sub: &Dense<T>, lanes: &[usize]) {
        for (i, &l) in lanes.iter().enumerate() {
            self.copy_lane(l, sub, i);
        }
    }
}

impl Slot {
    /// Lanes `lanes` of this slot as a slot of `lanes.len()` lanes.
    pub fn gather(&self, lanes: &[usize]) -> Slot {
        match self {
            Slot::Shared(v) => Slot::Shared(v.clone()),
            Slot::Real(d) => Slot::Real(d.gather(lanes)),
            Slot::Int(d) => Slot::Int(d.gather(lanes)),
            Slot::Tuple(items) => {
                Slot::Tuple(items.iter().map(|i| Arc::new(i.gather(lanes))).collect())
            }
            Slot::PerLane(vs) => Slot::PerLane(lanes.iter().map(|&l| vs[l].clone()).collect()),
        }
    }

    /// Write `sub` (a slot of the gathered lanes) back into lanes `lanes`
    /// of `self` (a slot of `z` lanes).
    pub fn scatter(&mut self, sub: &Slot, lanes: &[usize], z: usize) {
        match (&mut *self, sub) {
            (Slot::Real(a), Slot::Real(b)) if a.shape == b.shape => return a.scatter(b, lanes),
            (Slot::Int(a), Slot::Int(b)) if a.shape == b.shape => return a.scatter(b, lanes),
            (Slot::Shared(a), Slot::Shared(b)) if a == b => return,
            (Slot::Tuple(a), Slot::Tuple(b)) if a.len() == b.len() => {
                for (a, b) in a.iter_mut().zip(b) {
                    Arc::make_mut(a).scatter(b, lanes, z);
                }
                return;
            }
            // Spread a shared side over its lanes so dense stays dense.
            (Slot::Real(_) | Slot::Int(_) | Slot::Tuple(_), Slot::Shared(_)) => {
                let spread = sub.broadcast(lanes.len());
                if !matches!(spread, Slot::PerLane(_)) {
                    return self.scatter(&spread, lanes, z);
                }
            }
            (Slot::Shared(_), Slot::Real(_) | Slot::Int(_) | Slot::Tuple(_)) => {
                let spread = self.broadcast(z);
                if !matches!(spread, Slot::PerLane(_)) {
                    *self = spread;
                    return self.scatter(sub, lanes, z);
                }
            }
            _ => {}
        }
        if lanes.len() == z {
            let mut out = Slot::PerLane(vec![Value::Int(0); z]);
            if let Slot::PerLane(vs) = &mut out {
                for (i, &l) in lanes.iter().enumerate() {
                    vs[l] = sub.lane_value(i);
                }
            }
            *self = match out {
                Slot::PerLane(vs) => Slot::from_lane_values(vs),
                other => other,
            };
            return;
        }
        let mut values = self.to_lane_values(z);
        for (i, &l) in lanes.iter().enumerate() {
            values[l] = sub.lane_value(i);
        }
        *self = Slot::from_lane_values(values);
    }
}

#[cfg(test)]
mod tests;
