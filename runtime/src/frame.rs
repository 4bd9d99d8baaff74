//! The gradient program's variables as values, for checking batched
//! executors and generated kernels against the interpreter one block of
//! statements at a time.

use super::Model;
use super::error::RuntimeError;
use super::exec::Machine;
use super::grad::GradState;
use language::batch::cfg;
use language::mir::GradProgram;
use language::mir::{self, Stmt};
use language::value::Value;

/// Every variable of a gradient program (indexed by `VarId`, data and
/// transformed data included) with the target and gradient output.
#[derive(Clone, Debug, PartialEq)]
pub struct GradFrame {
    pub values: Vec<Option<Value>>,
    pub target: f64,
    pub gradient: Vec<f64>,
    /// The deepest each AD stack has been during the run.
    pub stack_depths: Vec<usize>,
}

impl Model {
    /// Run the whole gradient program `g` at unconstrained `theta` and keep
    /// the final value of every variable (the program keeps all variables
    /// in one flat frame, so every value computed is still there).
    pub fn gradient_frame(
        &self,
        g: &GradProgram,
        theta: &[f64],
        jacobian: bool,
    ) -> Result<GradFrame, RuntimeError> {
        self.check_len(theta)?;
        let start = GradFrame {
            values: vec![None; g.program.vars.len()],
            target: 0.0,
            gradient: vec![0.0; self.num_unconstrained()],
            stack_depths: vec![0; g.num_stacks as usize],
        };
        self.run_grad_statements(g, &start, theta, &g.body, jacobian)
    }

    /// [`Model::gradient_frame`] for the CFG `p` lowered from the gradient
    /// program (its variables include the lowering's temporaries): the
    /// values after running its gradient entry.
    pub fn gradient_frame_cfg(
        &self,
        p: &cfg::Program,
        theta: &[f64],
        jacobian: bool,
    ) -> Result<GradFrame, RuntimeError> {
        let entry = p.entry(language::batch::GRADIENT_ENTRY).ok_or_else(|| {
            RuntimeError::fatal("the CFG program has no log_density_gradient entry")
        })?;
        let mut m = self.gradient_machine(&p.mir, p.num_ad_stacks, theta, jacobian)?;
        super::cfg_exec::run(&mut m, p, entry, Vec::new())?;
        Ok(self.frame_of(m))
    }

    /// [`Model::gradient_frame`] for the PC program `p` built from the
    /// gradient's CFG: the values after running its gradient entry.
    pub fn gradient_frame_pc(
        &self,
        p: &language::batch::pc::Program,
        theta: &[f64],
        jacobian: bool,
    ) -> Result<GradFrame, RuntimeError> {
        let entry = p.entry(language::batch::GRADIENT_ENTRY).ok_or_else(|| {
            RuntimeError::fatal("the PC program has no log_density_gradient entry")
        })?;
        let mut m = self.gradient_machine(&p.mir, p.num_ad_stacks, theta, jacobian)?;
        super::pc_exec::run(&mut m, p, entry, None)?;
        Ok(self.frame_of(m))
    }

    /// Run `stmts` (statements of `g`'s body) starting from `frame`, with
    /// the unconstrained input `theta`; returns the frame afterwards.
    /// Statements that pop a stack see empty stacks.
    pub fn run_grad_statements(
        &self,
        g: &GradProgram,
        frame: &GradFrame,
        theta: &[f64],
        stmts: &[Stmt],
        jacobian: bool,
    ) -> Result<GradFrame, RuntimeError> {
        self.run_statements(&g.program, g.num_stacks, frame, theta, stmts, jacobian)
    }

    /// Run straight-line `stmts` of an entry of `program` (a gradient
    /// program's MIR, or a CFG's `mir` with `num_stacks` AD stacks) from
    /// `frame`; returns the frame afterwards. Stacks start empty.
    pub fn run_statements(
        &self,
        program: &mir::Program,
        num_stacks: u32,
        frame: &GradFrame,
        theta: &[f64],
        stmts: &[Stmt],
        jacobian: bool,
    ) -> Result<GradFrame, RuntimeError> {
        let mut m = self.machine_for(program);
        m.jacobian = jacobian;
        m.target = frame.target;
        for (i, value) in frame.values.iter().enumerate() {
            if let Some(value) = value {
                m.globals[i] = Some(value.clone());
            }
        }
        m.grad = Some(GradState {
            theta: theta.to_vec(),
            gradient: frame.gradient.clone(),
            stacks: vec![Vec::new(); num_stacks as usize],
            max_depths: vec![0; num_stacks as usize],
            layout: self.params.clone(),
        });
        m.block(stmts)?;
        Ok(self.frame_of(m))
    }

    fn frame_of(&self, mut m: Machine) -> GradFrame {
        let state = m.grad.take().expect("a gradient machine");
        let base = m.base;
        let values = m
            .globals
            .into_iter()
            .enumerate()
            .map(|(i, v)| v.or_else(|| base.get(i).cloned().flatten()))
            .collect();
        GradFrame {
            values,
            target: m.target,
            gradient: state.gradient,
            stack_depths: state.max_depths,
        }
    }
}
