//! Backward differentiation formulas of variable order (1–5) and variable
//! step for stiff systems — the method family of CVODES' BDF, which Stan's
//! `ode_bdf` uses.
//!
//! CVODES itself (Nordsieck arrays, its own order and step heuristics) is
//! far too large to reproduce step for step, so bat implements the
//! published quasi-constant-step BDF of Shampine & Reichelt ("The MATLAB
//! ODE Suite", SIAM J. Sci. Comput. 18, 1997; the algorithm of MATLAB's
//! `ode15s` and SciPy's `BDF`) with the plain BDF coefficients (no NDF
//! modification, as CVODES):
//! - the solution history is a table of backward differences D⁰…D^{k+2}
//!   on an equally spaced grid; a step-size change by a factor r rescales
//!   the table (interpolation), so formulas stay the constant-step ones;
//! - the corrector solves y − c·f(t, y) = ψ by a simplified Newton method
//!   (at most 4 iterations, convergence-rate test) with the LU of
//!   I − c·J, c = h/α_k; J is recomputed only when Newton fails, and a
//!   failure with a fresh J halves the step;
//! - the local error estimate is (1/(k+1))·‖D^{k+1}‖ in the RMS norm
//!   weighted by atol + rtol·|y|; a rejected step shrinks by
//!   max(0.2, 0.9·err^(−1/(k+1))) (times a Newton-effort safety factor);
//! - after k + 1 steps of equal size, the order moves to whichever of
//!   k − 1, k, k + 1 allows the largest next step (growth at most 10×);
//! - output times are interpolated with the difference table's polynomial.
//!
//! Why BDF and not a Rosenbrock or Radau IIA method: BDF needs only J
//! (never ∂f/∂t or second derivatives) and tolerates an approximate Newton
//! matrix, which is what makes forward sensitivities cheap: the coupled
//! system ([`super::sensitivity`]) is integrated as one state whose Newton
//! matrix is block diagonal with the state's J in every block (the
//! "simultaneous corrector" of CVODES), so each iteration solves with one
//! n × n LU. A Rosenbrock method would need the exact Jacobian of the
//! coupled system, i.e. second derivatives of f.

use super::lu::Lu;
use super::{OdeError, Tolerances, all_finite};

const MAX_ORDER: usize = 5;
const NEWTON_MAXITER: usize = 4;
const MIN_FACTOR: f64 = 0.2;
const MAX_FACTOR: f64 = 10.0;

/// A right-hand side with the Jacobian of one block of the state.
pub trait StiffSystem {
    type Error;
    /// dz/dt at (t, z).
    fn rhs(&mut self, t: f64, z: &[f64], dz: &mut [f64]) -> Result<(), Self::Error>;
    /// The n × n Jacobian (row-major) used for every block of the Newton
    /// matrix, at (t, z): ∂f/∂y of the states for a coupled system.
    fn jacobian(&mut self, t: f64, z: &[f64], jac: &mut [f64]) -> Result<(), Self::Error>;
    /// n, the size of a block; the state's length is a multiple of it.
    fn block(&self) -> usize;
}

/// Solve z' = f(t, z), z(t0) = z0 and return z at each of `ts` (sorted,
/// after `t0`).
pub fn integrate_times<S: StiffSystem>(
    sys: &mut S,
    z0: &[f64],
    t0: f64,
    ts: &[f64],
    tol: &Tolerances,
) -> Result<Vec<Vec<f64>>, OdeError<S::Error>> {
    let mut out = Vec::with_capacity(ts.len());
    let Some(&t_bound) = ts.last() else {
        return Ok(out);
    };
    let mut solver = Bdf::new(sys, z0, t0, t_bound, tol)?;
    let mut next = 0;
    let mut steps: u64 = 0;
    while next < ts.len() {
        while next < ts.len() && ts[next] <= solver.t {
            out.push(solver.interpolate(ts[next]));
            next += 1;
            steps = 0;
        }
        if next == ts.len() {
            break;
        }
        if steps >= tol.max_num_steps {
            return Err(OdeError::MaxNumSteps { time: ts[next] });
        }
        steps += 1;
        solver.step()?;
    }
    Ok(out)
}

/// RMS norm of `x ./ scale`.
fn rms(x: &[f64], scale: &[f64]) -> f64 {
    if x.is_empty() {
        return 0.0;
    }
    let s: f64 = x.iter().zip(scale).map(|(a, s)| (a / s) * (a / s)).sum();
    (s / x.len() as f64).sqrt()
}

/// γ_k = Σ_{j≤k} 1/j (γ₀ = 0): the BDF coefficients α_k = γ_k.
fn gamma(k: usize) -> f64 {
    (1..=k).map(|j| 1.0 / j as f64).sum()
}

/// Error constant of order k: 1/(k+1).
fn error_const(k: usize) -> f64 {
    1.0 / (k + 1) as f64
}

/// The (k+1) × (k+1) matrix R(k, factor) of Shampine & Reichelt, row-major.
fn compute_r(order: usize, factor: f64) -> Vec<f64> {
    let n = order + 1;
    let mut m = vec![0.0; n * n];
    m[..n].fill(1.0);
    for i in 1..n {
        for j in 1..n {
            m[i * n + j] = (i as f64 - 1.0 - factor * j as f64) / i as f64;
        }
    }
    // Cumulative product down each column.
    for i in 1..n {
        for j in 0..n {
            m[i * n + j] *= m[(i - 1) * n + j];
        }
    }
    m
}

/// Rescale the difference table for a step multiplied by `factor`:
/// D[..=order] ← (R·U)ᵀ D[..=order].
fn change_d(d: &mut [Vec<f64>], order: usize, factor: f64) {
    let n = order + 1;
    let r = compute_r(order, factor);
    let u = compute_r(order, 1.0);
    let mut ru = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..n {
            ru[i * n + j] = (0..n).map(|k| r[i * n + k] * u[k * n + j]).sum();
        }
    }
    let len = d[0].len();
    let old: Vec<Vec<f64>> = d[..n].to_vec();
    for (j, row) in d[..n].iter_mut().enumerate() {
        for e in 0..len {
            row[e] = (0..n).map(|i| ru[i * n + j] * old[i][e]).sum();
        }
    }
}

/// (converged, iterations, y, y − prediction) of a Newton solve.
type NewtonResult = (bool, usize, Vec<f64>, Vec<f64>);

/// The outcome of an accepted step attempt.
struct Accepted {
    t_new: f64,
    y_new: Vec<f64>,
    /// y_new minus the prediction (D^{k+1} of the new table).
    d: Vec<f64>,
    /// Newton-effort safety factor of the step.
    safety: f64,
    scale: Vec<f64>,
    error_norm: f64,
}

struct Bdf<'s, S: StiffSystem> {
    sys: &'s mut S,
    n: usize,
    t: f64,
    t_bound: f64,
    atol: f64,
    rtol: f64,
    newton_tol: f64,
    h_abs: f64,
    order: usize,
    n_equal_steps: usize,
    /// Backward differences D⁰ … D^{MAX_ORDER+2}.
    d: Vec<Vec<f64>>,
    jac: Vec<f64>,
    lu: Option<Lu>,
}

impl<'s, S: StiffSystem> Bdf<'s, S> {
    fn new(
        sys: &'s mut S,
        z0: &[f64],
        t0: f64,
        t_bound: f64,
        tol: &Tolerances,
    ) -> Result<Self, OdeError<S::Error>> {
        let len = z0.len();
        let n = sys.block().max(1);
        let mut f0 = vec![0.0; len];
        sys.rhs(t0, z0, &mut f0).map_err(OdeError::System)?;
        if !all_finite(&f0) {
            return Err(OdeError::NonFinite { time: t0 });
        }
        let mut jac = vec![0.0; n * n];
        sys.jacobian(t0, z0, &mut jac).map_err(OdeError::System)?;
        let (rtol, atol) = (tol.relative, tol.absolute);
        let h_abs = initial_step(sys, z0, &f0, t0, t_bound, rtol, atol)?;
        let mut d = vec![vec![0.0; len]; MAX_ORDER + 3];
        d[0].copy_from_slice(z0);
        for (e, f) in d[1].iter_mut().zip(&f0) {
            *e = f * h_abs;
        }
        Ok(Bdf {
            sys,
            n,
            t: t0,
            t_bound,
            atol,
            rtol,
            newton_tol: (10.0 * f64::EPSILON / rtol).max(0.03_f64.min(rtol.sqrt())),
            h_abs,
            order: 1,
            n_equal_steps: 0,
            d,
            jac,
            lu: None,
        })
    }

    fn scale_of(&self, y: &[f64]) -> Vec<f64> {
        y.iter().map(|v| self.atol + self.rtol * v.abs()).collect()
    }

    /// The difference table's polynomial at `t` (within the last step).
    fn interpolate(&self, t: f64) -> Vec<f64> {
        let h = self.h_abs;
        let mut y = self.d[0].clone();
        let mut p = 1.0;
        for i in 0..self.order {
            let shift = self.t - h * i as f64;
            p *= (t - shift) / (h * (i + 1) as f64);
            for (e, di) in y.iter_mut().zip(&self.d[i + 1]) {
                *e += di * p;
            }
        }
        y
    }

    /// Newton's method for the corrector from the prediction; returns
    /// (converged, iterations, y, d = y − prediction).
    fn newton(
        &mut self,
        t_new: f64,
        y_predict: &[f64],
        c: f64,
        psi: &[f64],
        scale: &[f64],
    ) -> Result<NewtonResult, OdeError<S::Error>> {
        let len = y_predict.len();
        let mut y = y_predict.to_vec();
        let mut d = vec![0.0; len];
        let mut f = vec![0.0; len];
        let mut dy_norm_old: Option<f64> = None;
        let mut iterations = 0;
        for k in 0..NEWTON_MAXITER {
            iterations = k + 1;
            self.sys.rhs(t_new, &y, &mut f).map_err(OdeError::System)?;
            if !all_finite(&f) {
                return Ok((false, iterations, y, d));
            }
            let mut dy: Vec<f64> = (0..len).map(|e| c * f[e] - psi[e] - d[e]).collect();
            let lu = self.lu.as_ref().expect("factorised before Newton");
            for block in dy.chunks_mut(self.n) {
                lu.solve(block);
            }
            let dy_norm = rms(&dy, scale);
            let rate = dy_norm_old.map(|old| dy_norm / old);
            if let Some(rate) = rate
                && (rate >= 1.0
                    || rate.powi((NEWTON_MAXITER - k) as i32) / (1.0 - rate) * dy_norm
                        > self.newton_tol)
            {
                return Ok((false, iterations, y, d));
            }
            for e in 0..len {
                y[e] += dy[e];
                d[e] += dy[e];
            }
            if dy_norm == 0.0
                || rate.is_some_and(|rate| rate / (1.0 - rate) * dy_norm < self.newton_tol)
            {
                return Ok((true, iterations, y, d));
            }
            dy_norm_old = Some(dy_norm);
        }
        Ok((false, iterations, y, d))
    }

    fn factorise(&mut self, c: f64) {
        let n = self.n;
        let mut m: Vec<f64> = self.jac.iter().map(|j| -c * j).collect();
        for i in 0..n {
            m[i * n + i] += 1.0;
        }
        self.lu = Lu::new(m, n);
    }

    /// One accepted step.
    fn step(&mut self) -> Result<(), OdeError<S::Error>> {
        let t = self.t;
        let min_step = 10.0 * (t.next_up() - t).abs();
        let mut order = self.order;
        let mut h_abs = self.h_abs;
        if h_abs < min_step {
            change_d(&mut self.d, order, min_step / h_abs);
            h_abs = min_step;
            self.n_equal_steps = 0;
        }
        let mut current_jac = false;
        let alpha = gamma(order);
        let accepted = loop {
            if h_abs < min_step {
                return Err(OdeError::StepSizeTooSmall { time: t });
            }
            let mut t_new = t + h_abs;
            if t_new > self.t_bound {
                t_new = self.t_bound;
                change_d(&mut self.d, order, (t_new - t).abs() / h_abs);
                self.n_equal_steps = 0;
                self.lu = None;
            }
            let h = t_new - t;
            h_abs = h.abs();
            let len = self.d[0].len();
            let y_predict: Vec<f64> = (0..len)
                .map(|e| (0..=order).map(|i| self.d[i][e]).sum())
                .collect();
            let scale = self.scale_of(&y_predict);
            let psi: Vec<f64> = (0..len)
                .map(|e| (1..=order).map(|i| self.d[i][e] * gamma(i)).sum::<f64>() / alpha)
                .collect();
            let c = h / alpha;
            let (converged, iterations, y_new, d) = loop {
                if self.lu.is_none() {
                    self.factorise(c);
                }
                let attempt = if self.lu.is_some() {
                    self.newton(t_new, &y_predict, c, &psi, &scale)?
                } else {
                    (false, NEWTON_MAXITER, y_predict.clone(), vec![0.0; len])
                };
                if attempt.0 || current_jac {
                    break attempt;
                }
                self.sys
                    .jacobian(t_new, &y_predict, &mut self.jac)
                    .map_err(OdeError::System)?;
                self.lu = None;
                current_jac = true;
            };
            if !converged {
                h_abs *= 0.5;
                change_d(&mut self.d, order, 0.5);
                self.n_equal_steps = 0;
                self.lu = None;
                continue;
            }
            let safety =
                0.9 * (2 * NEWTON_MAXITER + 1) as f64 / (2 * NEWTON_MAXITER + iterations) as f64;
            let scale = self.scale_of(&y_new);
            let error: Vec<f64> = d.iter().map(|v| error_const(order) * v).collect();
            let error_norm = rms(&error, &scale);
            if error_norm > 1.0 {
                let factor = MIN_FACTOR.max(safety * error_norm.powf(-1.0 / (order + 1) as f64));
                h_abs *= factor;
                change_d(&mut self.d, order, factor);
                self.n_equal_steps = 0;
                continue;
            }
            break Accepted {
                t_new,
                y_new,
                d,
                safety,
                scale,
                error_norm,
            };
        };
        let Accepted {
            t_new,
            y_new,
            d,
            safety,
            scale,
            error_norm,
        } = accepted;
        if !all_finite(&y_new) {
            return Err(OdeError::NonFinite { time: t_new });
        }
        self.n_equal_steps += 1;
        self.t = t_new;
        self.h_abs = h_abs;
        // D^{k+2} = d − D^{k+1}, D^{k+1} = d, then Dⁱ += Dⁱ⁺¹ downwards.
        let len = d.len();
        for e in 0..len {
            self.d[order + 2][e] = d[e] - self.d[order + 1][e];
            self.d[order + 1][e] = d[e];
        }
        for i in (0..=order).rev() {
            for e in 0..len {
                let below = self.d[i + 1][e];
                self.d[i][e] += below;
            }
        }
        if self.n_equal_steps < order + 1 {
            return Ok(());
        }
        let error_m_norm = if order > 1 {
            let e: Vec<f64> = self.d[order]
                .iter()
                .map(|v| error_const(order - 1) * v)
                .collect();
            rms(&e, &scale)
        } else {
            f64::INFINITY
        };
        let error_p_norm = if order < MAX_ORDER {
            let e: Vec<f64> = self.d[order + 2]
                .iter()
                .map(|v| error_const(order + 1) * v)
                .collect();
            rms(&e, &scale)
        } else {
            f64::INFINITY
        };
        let norms = [error_m_norm, error_norm, error_p_norm];
        let factors: Vec<f64> = norms
            .iter()
            .enumerate()
            .map(|(i, e)| e.powf(-1.0 / (order + i) as f64))
            .collect();
        let (best, best_factor) =
            factors
                .iter()
                .enumerate()
                .fold(
                    (0, f64::NEG_INFINITY),
                    |acc, (i, &f)| if f > acc.1 { (i, f) } else { acc },
                );
        order = (order + best).saturating_sub(1).clamp(1, MAX_ORDER);
        self.order = order;
        let factor = MAX_FACTOR.min(safety * best_factor);
        self.h_abs *= factor;
        change_d(&mut self.d, order, factor);
        self.n_equal_steps = 0;
        self.lu = None;
        Ok(())
    }
}

/// Hairer–Wanner's initial step for a method of order 1.
fn initial_step<S: StiffSystem>(
    sys: &mut S,
    y0: &[f64],
    f0: &[f64],
    t0: f64,
    t_bound: f64,
    rtol: f64,
    atol: f64,
) -> Result<f64, OdeError<S::Error>> {
    let interval = (t_bound - t0).abs();
    if interval == 0.0 || y0.is_empty() {
        return Ok(interval);
    }
    let scale: Vec<f64> = y0.iter().map(|y| atol + y.abs() * rtol).collect();
    let d0 = rms(y0, &scale);
    let d1 = rms(f0, &scale);
    let h0 = if d0 < 1e-5 || d1 < 1e-5 {
        1e-6
    } else {
        0.01 * d0 / d1
    };
    let h0 = h0.min(interval);
    let y1: Vec<f64> = y0.iter().zip(f0).map(|(y, f)| y + h0 * f).collect();
    let mut f1 = vec![0.0; y0.len()];
    sys.rhs(t0 + h0, &y1, &mut f1).map_err(OdeError::System)?;
    let diff: Vec<f64> = f1.iter().zip(f0).map(|(a, b)| a - b).collect();
    let d2 = rms(&diff, &scale) / h0;
    let h1 = if d1 <= 1e-15 && d2 <= 1e-15 {
        1e-6_f64.max(h0 * 1e-3)
    } else {
        (0.01 / d1.max(d2)).powf(1.0 / 2.0)
    };
    Ok((100.0 * h0).min(h1).min(interval))
}
