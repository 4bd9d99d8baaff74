//! The gradient program's variables as values, for checking batched
//! executors and generated kernels against the interpreter one block of
//! statements at a time.

use super::Model;
use super::error::RuntimeError;
use super::exec::Machine;
use super::grad::GradState;
use crate::ad::GradProgram;
use crate::mir::Stmt;
use crate::value::Value;

/// Every variable of a gradient program (indexed by `VarId`, data and
/// transformed data included) with the target and gradient output.
#[derive(Clone, Debug, PartialEq)]
pub struct GradFrame {
    pub values: Vec<Option<Value>>,
    pub target: f64,
    pub gradient: Vec<f64>,
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
        };
        self.run_grad_statements(g, &start, theta, &g.body, jacobian)
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
        let mut m = Machine::with_base(&g.program, &self.globals);
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
            stacks: vec![Vec::new(); g.num_stacks as usize],
            layout: self.params.clone(),
        });
        m.block(stmts)?;
        let state = m.grad.take().expect("set above");
        let values = m
            .globals
            .into_iter()
            .enumerate()
            .map(|(i, v)| v.or_else(|| self.globals.get(i).cloned().flatten()))
            .collect();
        Ok(GradFrame {
            values,
            target: m.target,
            gradient: state.gradient,
        })
    }
}
