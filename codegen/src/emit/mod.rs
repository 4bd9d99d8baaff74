//! CUDA C for straight-line MIR statements, one lane per thread.
//!
//! A statement becomes a loop over its result's elements (or one
//! assignment for a scalar) that reads each operand at the same element,
//! scalars broadcast, through [`Emitter::elem`]: the C expression of one
//! element of an expression, given the C expression of its flat index.
//! Indexing, transposes and other reshapes remap that index, so they cost
//! nothing. What cannot be read one element at a time — matrix products,
//! stack pops, literals of containers — is computed into a thread-local
//! array first, or straight into the assigned variable at the top of a
//! statement. Reductions, argument checks and index checks are hoisted
//! before the statement's loop (so a statement may read the variable it
//! overwrites), except inside a branch of a conditional expression, where
//! nothing that can fail is hoisted: index checks there set a flag tested
//! after the statement.
//!
//! A lane that fails (a rejected argument check, an index out of range,
//! integer overflow, an AD stack overflow) sets its status and the
//! failure [`Site`] and returns from the kernel.

mod calls;
mod expr;
mod linalg;
mod ode;
mod params;
mod rng;
mod stmt;
mod view;

use language::mir::{Expr, Program, Stmt, VarId};
use language::span::Span;

use super::layout::{Layout, Place, SITE_SLOT, STATUS_SLOT};
use super::shape::Shape;
use super::typing::{self, ShapeEnv, Unsupported};

pub use calls::Restore;
pub(crate) use linalg::is_dense;
pub use rng::is_device_draw;

/// Largest intermediate value (in doubles) kept in a thread's local
/// memory; larger ones go to scratch slots of the lane state.
pub const LOCAL_LIMIT: usize = 1024;

/// How a lane stopped at a failure site.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailKind {
    /// A domain error or `reject`: the proposal is rejected.
    Rejection,
    /// A declared constraint of a computed value violated (rejected too).
    Constraint,
    IndexOutOfRange,
    /// Stops the run: integer overflow, division by zero, `fatal_error`,
    /// an AD stack that overflowed its capacity.
    Fatal,
    /// The AD stack capacity (sized from the interpreter) was too small.
    StackOverflow,
}

impl FailKind {
    /// The value of the lane's status slot.
    pub fn status(self) -> f64 {
        match self {
            FailKind::Rejection | FailKind::Constraint => super::layout::REJECTED_STATUS,
            FailKind::IndexOutOfRange => super::layout::ERROR_STATUS,
            FailKind::Fatal | FailKind::StackOverflow => super::layout::FATAL_STATUS,
        }
    }
}

/// A place where a lane can fail: what happened, and in which statement.
#[derive(Clone, Debug, PartialEq)]
pub struct Site {
    pub kind: FailKind,
    pub message: String,
    pub span: Span,
    /// For `reject` and `fatal_error`: the message as the interpreter
    /// writes it, its scalar values stored by the lane before it stopped
    /// (empty for other sites: [`Site::message`]).
    pub parts: Vec<MessagePart>,
}

/// A piece of a `reject` / `fatal_error` message.
#[derive(Clone, Debug, PartialEq)]
pub enum MessagePart {
    Text(String),
    /// A scalar the lane stored in this state slot when it failed.
    Value {
        slot: usize,
        int: bool,
    },
    /// A real the lane stored in this state slot, as Rust's `Display`
    /// writes it (`nan`, `inf`), as the interpreter's ODE messages do.
    Shortest {
        slot: usize,
    },
}

impl Site {
    /// The message of lane with state `slot_value` (its value of a slot),
    /// as the interpreter writes it.
    pub fn lane_message(&self, slot_value: impl Fn(usize) -> f64) -> String {
        if self.parts.is_empty() {
            return self.message.clone();
        }
        self.parts
            .iter()
            .map(|p| match p {
                MessagePart::Text(s) => s.clone(),
                MessagePart::Value { slot, int: true } => {
                    runtime::print_value(&language::value::Value::Int(slot_value(*slot) as i64))
                }
                MessagePart::Value { slot, int: false } => {
                    runtime::print_value(&language::value::Value::Real(slot_value(*slot)))
                }
                MessagePart::Shortest { slot } => {
                    let x = slot_value(*slot);
                    if x.is_nan() {
                        "nan".to_string()
                    } else if x.is_infinite() {
                        if x > 0.0 { "inf" } else { "-inf" }.to_string()
                    } else {
                        x.to_string()
                    }
                }
            })
            .collect()
    }
}

pub struct Emitter<'a> {
    pub program: &'a Program,
    pub layout: &'a Layout,
    /// Lines emitted so far (the kernel body).
    pub lines: Vec<String>,
    /// Failure sites of the emitted code; site `k` has id `site_base + k`.
    pub sites: Vec<Site>,
    site_base: usize,
    fresh: usize,
    /// Inside a branch of a conditional expression, where nothing that
    /// can fail may be hoisted (the interpreter may not evaluate it).
    in_branch: usize,
    /// Random draws in the current statement (at most one is generated).
    draws: usize,
    /// The statement being emitted used the inline index-check flag.
    inline_checks: bool,
    span: Span,
    text: String,
    /// Values of the current statement computed into thread-local arrays,
    /// by the address of their expression.
    materialized: Vec<(usize, Materialized)>,
    /// Lines, sites and fresh names before the current op (to undo it).
    mark: (usize, usize, usize),
    /// Primitives rewritten as the products that define them, by the
    /// address of the original expression (kept for the emitter's life,
    /// so that addresses stay unique keys of `materialized`).
    products: Vec<(usize, std::rc::Rc<Expr>)>,
}

/// A value computed whole before the statement reads it.
#[derive(Clone, Debug)]
pub(crate) enum Materialized {
    /// A thread-local array.
    Local(String),
    /// Scratch slots of the lane state from this one.
    Scratch(usize),
}

impl Materialized {
    /// Element `idx`.
    pub(crate) fn at(&self, idx: &str) -> String {
        match self {
            Materialized::Local(name) => format!("{name}[{idx}]"),
            Materialized::Scratch(base) => format!("S({base} + {idx})"),
        }
    }
}

/// Where a statement writes: the state slots of a variable (possibly
/// through index maps) or a thread-local array.
#[derive(Clone, Debug)]
pub(crate) enum Dest {
    State { base: usize, maps: Vec<view::View> },
    Local(String),
}

impl<'a> Emitter<'a> {
    pub fn new(program: &'a Program, layout: &'a Layout, site_base: usize) -> Emitter<'a> {
        Emitter {
            program,
            layout,
            lines: Vec::new(),
            sites: Vec::new(),
            site_base,
            fresh: 0,
            in_branch: 0,
            draws: 0,
            inline_checks: false,
            span: Span { start: 0, end: 0 },
            text: String::new(),
            materialized: Vec::new(),
            products: Vec::new(),
            mark: (0, 0, 0),
        }
    }

    /// Emit `stmt`, or leave the emitter as it was and say why not.
    pub fn statement(&mut self, stmt: &Stmt) -> Result<(), Unsupported> {
        self.begin(&super::first_line(self.program, stmt), stmt.span);
        let outcome = self.stmt(stmt);
        self.end(outcome)
    }

    /// Start an op: its text and span name its failure sites.
    fn begin(&mut self, text: &str, span: Span) {
        self.mark = (self.lines.len(), self.sites.len(), self.fresh);
        self.span = span;
        self.text = text.to_string();
        self.inline_checks = false;
        self.draws = 0;
        self.materialized.clear();
        self.lines.push(format!("// {text}"));
    }

    /// Finish an op: its inline index checks, or undo it if it failed.
    fn end(&mut self, outcome: Result<(), Unsupported>) -> Result<(), Unsupported> {
        let outcome = outcome.map(|()| {
            if self.inline_checks {
                let fail = self.fail(FailKind::IndexOutOfRange, "index out of range".to_string());
                self.lines.push(format!("if (bat_err) {fail}"));
            }
        });
        if outcome.is_err() {
            let (lines, sites, fresh) = self.mark;
            self.lines.truncate(lines);
            self.sites.truncate(sites);
            self.fresh = fresh;
        }
        outcome
    }

    /// The C expression of a branch condition (scalar), with its checks.
    pub fn branch_condition(&mut self, cond: &Expr) -> Result<String, Unsupported> {
        self.text = "the branch condition".to_string();
        self.inline_checks = false;
        self.draws = 0;
        self.materialized.clear();
        let c = self.elem(cond, "0")?;
        let value = self.fresh("c");
        self.lines.push(format!("const double {value} = {c};"));
        if self.inline_checks {
            let fail = self.fail(FailKind::IndexOutOfRange, "index out of range".to_string());
            self.lines.push(format!("if (bat_err) {fail}"));
        }
        Ok(value)
    }

    fn fresh(&mut self, prefix: &str) -> String {
        self.fresh += 1;
        format!("{prefix}{}", self.fresh)
    }

    pub(crate) fn var_name(&self, var: VarId) -> String {
        self.layout.var_name(var)
    }

    pub(crate) fn shape(&self, e: &Expr) -> Result<Shape, Unsupported> {
        typing::shape_of(self.layout, e)
    }

    /// C code that stops the lane at a new failure site.
    pub(crate) fn fail(&mut self, kind: FailKind, what: String) -> String {
        self.fail_with(kind, what, Vec::new())
    }

    /// [`Emitter::fail`] with the message's parts ([`Site::parts`]).
    pub(crate) fn fail_with(
        &mut self,
        kind: FailKind,
        what: String,
        parts: Vec<MessagePart>,
    ) -> String {
        let id = self.site_base + self.sites.len();
        self.sites.push(Site {
            kind,
            message: format!("{what} in `{}`", self.text),
            span: self.span,
            parts,
        });
        format!(
            "{{ S({STATUS_SLOT}) = {:?}; S({SITE_SLOT}) = {id}.0; return; }}",
            kind.status()
        )
    }

    /// The state slots of a variable the program writes.
    pub(crate) fn state_place(&self, var: VarId) -> Result<(usize, Shape), Unsupported> {
        match (self.layout.place(var), self.layout.var_shape(var)) {
            (Some(Place::State { base, .. }), Some(shape)) => Ok((base, shape)),
            (Some(Place::Data { .. }), _) => {
                Err(format!("assignment to data `{}`", self.var_name(var)))
            }
            _ => Err(format!(
                "`{}` has no value of known size",
                self.var_name(var)
            )),
        }
    }

    /// The C expression of element `idx` of a destination.
    pub(crate) fn dest_elem(&mut self, dest: &Dest, idx: &str) -> Result<String, Unsupported> {
        match dest {
            Dest::Local(name) => Ok(format!("{name}[{idx}]")),
            Dest::State { base, maps } => {
                let mut at = idx.to_string();
                for map in maps.iter().rev() {
                    at = self.map(map, &at)?;
                }
                Ok(format!("S({base} + {at})"))
            }
        }
    }
}

/// A C double literal that reads back as exactly `x`.
pub fn real_literal(x: f64) -> String {
    if x.is_nan() {
        "BAT_NAN".to_string()
    } else if x.is_infinite() {
        if x > 0.0 { "BAT_INF" } else { "(-BAT_INF)" }.to_string()
    } else {
        // Rust's Debug form is the shortest round-tripping decimal, with a
        // `.` or an exponent, so C reads it as the same double.
        format!("({x:?})")
    }
}

/// A `for` loop over `n` elements with index `e` around `body`.
pub(crate) fn for_each(e: &str, n: usize, body: &str) -> String {
    format!("#pragma unroll 1\nfor (int {e} = 0; {e} < {n}; ++{e}) {{ {body} }}")
}
