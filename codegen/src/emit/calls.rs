//! The calling ops of the PC IR: argument and result writes, saving a
//! variable on its stack around a call (`Push`), restoring it (`Pop`,
//! `Peek`), and the call and return terminators on the program-counter
//! stack — all per lane, in device memory.

use language::batch::pc::BlockId;
use language::mir::{Expr, VarId};

use super::super::layout::{DEVICE_MAX_CALL_DEPTH, PC_SLOT, StackSlots};
use super::super::typing::Unsupported;
use super::{Emitter, FailKind, for_each};

/// Which restore: `Pop` removes the saved value, `Peek` leaves it.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Restore {
    Pop,
    Peek,
}

impl Emitter<'_> {
    /// `var = value` (an argument, or a result converted to the declared
    /// return type: ints and reals are both doubles here).
    pub fn write_var(&mut self, var: VarId, value: &Expr, text: &str) -> Result<(), Unsupported> {
        self.begin(text, value.span);
        let outcome = self.assign_whole(var, value, "=");
        self.end(outcome)
    }

    /// The arguments of an external call, one after another: compactly
    /// into `out[k * n_active + t]`, or with `record` (the record-count
    /// slot) as the next record `(id, arguments...)` of the lane's
    /// record buffer `out[(lane * cap + c) * width ..]`.
    pub fn pack(
        &mut self,
        args: &[Expr],
        record: Option<usize>,
        id: usize,
    ) -> Result<(), Unsupported> {
        self.begin(
            "the call's arguments",
            language::span::Span { start: 0, end: 0 },
        );
        let outcome = self.pack_code(args, record, id);
        self.end(outcome)
    }

    fn pack_code(
        &mut self,
        args: &[Expr],
        record: Option<usize>,
        id: usize,
    ) -> Result<(), Unsupported> {
        if let Some(slot) = record {
            self.lines.push(format!(
                "const int rc = (int)S({slot});\nif (rc >= cap) {{ S({}) = {:?}; S({}) = {:?}; return; }}\ndouble* rec = out + ((long long)lane * cap + rc) * width; rec[0] = {id}.0;",
                super::super::layout::STATUS_SLOT,
                super::super::layout::FATAL_STATUS,
                super::super::layout::SITE_SLOT,
                super::super::program::RECORD_OVERFLOW_SITE,
            ));
        } else {
            self.lines.push("(void)width; (void)cap;".to_string());
        }
        let mut offset = 0;
        for a in args {
            let n = self.shape(a)?.len();
            let e = self.fresh("e");
            let v = self.elem(a, &e)?;
            let dest = match record {
                Some(_) => format!("rec[1 + {offset} + {e}]"),
                None => format!("out[(long long)({offset} + {e}) * n_active + t]"),
            };
            self.lines.push(for_each(&e, n, &format!("{dest} = {v};")));
            offset += n;
        }
        if let Some(slot) = record {
            self.lines.push(format!("S({slot}) = rc + 1;"));
        }
        Ok(())
    }

    /// Save `vars` (a run of `Push` ops), in order: on the save stack as
    /// one frame when the layout has one, else each on its own stack.
    pub fn push_vars(&mut self, vars: &[VarId]) -> Result<(), Unsupported> {
        let Some(stack) = self.layout.save_stack.clone() else {
            return vars.iter().try_for_each(|&v| self.push_var(v));
        };
        let names: Vec<String> = vars.iter().map(|&v| self.var_name(v)).collect();
        let text = format!("push {}", names.join(", "));
        self.begin(&text, language::span::Span { start: 0, end: 0 });
        let outcome = self.push_frame_code(vars, &stack);
        self.end(outcome)
    }

    /// Each of `vars`' first slot and length, and their total length.
    fn frame_places(&self, vars: &[VarId]) -> Result<(Vec<(usize, usize)>, usize), Unsupported> {
        let places = vars
            .iter()
            .map(|&v| self.state_place(v).map(|(base, shape)| (base, shape.len())))
            .collect::<Result<Vec<_>, _>>()?;
        let total = places.iter().map(|(_, n)| n).sum();
        Ok((places, total))
    }

    /// `vars` copied to the top of the save stack, the first lowest.
    fn push_frame_code(&mut self, vars: &[VarId], stack: &StackSlots) -> Result<(), Unsupported> {
        let (places, total) = self.frame_places(vars)?;
        let d = self.fresh("depth");
        let fail = self.fail(
            FailKind::Fatal,
            format!("more than {DEVICE_MAX_CALL_DEPTH} saved values"),
        );
        self.lines.push(format!(
            "const int {d} = (int)S({}); if ({d} > {} - {total}) {fail}",
            stack.depth, stack.capacity
        ));
        let mut offset = 0;
        for (base, n) in places {
            let e = self.fresh("e");
            self.lines.push(for_each(
                &e,
                n,
                &format!(
                    "S({} + {d} + {offset} + {e}) = S({base} + {e});",
                    stack.base
                ),
            ));
            offset += n;
        }
        self.lines
            .push(format!("S({}) = {d} + {total};", stack.depth));
        Ok(())
    }

    /// Restore `vars` (a run of `Pop` or `Peek` ops), in order: from the
    /// top of the save stack when the layout has one (the reverse of the
    /// run of pushes that saved them), else each from its own stack.
    pub fn restore_vars(&mut self, vars: &[VarId], how: Restore) -> Result<(), Unsupported> {
        let Some(stack) = self.layout.save_stack.clone() else {
            return vars.iter().try_for_each(|&v| self.restore_var(v, how));
        };
        let names: Vec<String> = vars.iter().map(|&v| self.var_name(v)).collect();
        let text = format!("restore {}", names.join(", "));
        self.begin(&text, language::span::Span { start: 0, end: 0 });
        let outcome = if how == Restore::Pop {
            self.pop_frame_code(vars, &stack)
        } else {
            // `saves_nest_as_frames` refuses programs that peek.
            Err("a peek at the save stack".to_string())
        };
        self.end(outcome)
    }

    /// `vars` taken off the top of the save stack: the first is the top.
    fn pop_frame_code(&mut self, vars: &[VarId], stack: &StackSlots) -> Result<(), Unsupported> {
        let (places, total) = self.frame_places(vars)?;
        let d = self.fresh("depth");
        let fail = self.fail(
            FailKind::Fatal,
            format!("the save stack holds fewer than {total} values"),
        );
        self.lines.push(format!(
            "const int {d} = (int)S({}) - {total}; if ({d} < 0) {fail}",
            stack.depth
        ));
        let mut above = total;
        for (base, n) in places {
            above -= n;
            let e = self.fresh("e");
            self.lines.push(for_each(
                &e,
                n,
                &format!("S({base} + {e}) = S({} + {d} + {above} + {e});", stack.base),
            ));
        }
        self.lines.push(format!("S({}) = {d};", stack.depth));
        Ok(())
    }

    /// Save `var` on its stack.
    fn push_var(&mut self, var: VarId) -> Result<(), Unsupported> {
        let text = format!("push {}", self.var_name(var));
        self.begin(&text, language::span::Span { start: 0, end: 0 });
        let outcome = self.push_var_code(var);
        self.end(outcome)
    }

    fn push_var_code(&mut self, var: VarId) -> Result<(), Unsupported> {
        let (base, shape) = self.state_place(var)?;
        let stack = self
            .layout
            .var_stack(var)
            .cloned()
            .ok_or_else(|| format!("`{}` has no stack", self.var_name(var)))?;
        let n = shape.len();
        let d = self.fresh("depth");
        let fail = self.fail(
            FailKind::Fatal,
            format!("more than {DEVICE_MAX_CALL_DEPTH} saved values"),
        );
        self.lines.push(format!(
            "const int {d} = (int)S({}); if ({d} >= {}) {fail}",
            stack.depth, stack.capacity
        ));
        let e = self.fresh("e");
        self.lines.push(for_each(
            &e,
            n,
            &format!("S({} + {d} * {n} + {e}) = S({base} + {e});", stack.base),
        ));
        self.lines.push(format!("S({}) = {d} + 1;", stack.depth));
        Ok(())
    }

    /// Restore `var` from the top of its stack.
    fn restore_var(&mut self, var: VarId, how: Restore) -> Result<(), Unsupported> {
        let text = format!("restore {}", self.var_name(var));
        self.begin(&text, language::span::Span { start: 0, end: 0 });
        let outcome = self.restore_var_code(var, how);
        self.end(outcome)
    }

    fn restore_var_code(&mut self, var: VarId, how: Restore) -> Result<(), Unsupported> {
        let (base, shape) = self.state_place(var)?;
        let stack = self
            .layout
            .var_stack(var)
            .cloned()
            .ok_or_else(|| format!("`{}` has no stack", self.var_name(var)))?;
        let n = shape.len();
        let d = self.fresh("depth");
        let fail = self.fail(
            FailKind::Fatal,
            format!("the stack of `{}` is empty", self.var_name(var)),
        );
        self.lines.push(format!(
            "const int {d} = (int)S({}) - 1; if ({d} < 0) {fail}",
            stack.depth
        ));
        let e = self.fresh("e");
        self.lines.push(for_each(
            &e,
            n,
            &format!("S({base} + {e}) = S({} + {d} * {n} + {e});", stack.base),
        ));
        if how == Restore::Pop {
            self.lines.push(format!("S({}) = {d};", stack.depth));
        }
        Ok(())
    }

    /// Call: push the return block, go to the callee's entry.
    pub fn call(&mut self, ret: BlockId, target: BlockId, callee: &str) -> Result<(), Unsupported> {
        let stack = self
            .layout
            .call_stack
            .clone()
            .ok_or("a call without a program-counter stack")?;
        self.begin(
            &format!("call {callee}"),
            language::span::Span { start: 0, end: 0 },
        );
        let d = self.fresh("depth");
        let fail = self.fail(
            FailKind::Fatal,
            format!(
                "recursion too deep: more than {DEVICE_MAX_CALL_DEPTH} nested calls of user functions (in `{callee}`)"
            ),
        );
        self.lines.push(format!(
            "const int {d} = (int)S({}); if ({d} >= {}) {fail}\nS({} + {d}) = {}.0; S({}) = {d} + 1; S({PC_SLOT}) = {}.0;",
            stack.depth, stack.capacity, stack.base, ret.0, stack.depth, target.0
        ));
        Ok(())
    }

    /// Return: pop the program-counter stack; an empty one ends the run.
    pub fn return_code(&mut self) -> Result<(), Unsupported> {
        match self.layout.call_stack.clone() {
            None => self.lines.push(format!("S({PC_SLOT}) = -1.0;")),
            Some(stack) => {
                let d = self.fresh("depth");
                self.lines.push(format!(
                    "const int {d} = (int)S({}) - 1;\nif ({d} < 0) S({PC_SLOT}) = -1.0; else {{ S({PC_SLOT}) = S({} + {d}); S({}) = {d}; }}",
                    stack.depth, stack.base, stack.depth
                ));
            }
        }
        Ok(())
    }
}
