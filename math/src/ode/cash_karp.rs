//! Cash–Karp 5(4) with Boost.Odeint's controlled stepper, as Stan's
//! `ode_ckrk` runs it:
//!
//! ```text
//! integrate_times(make_controlled(atol, rtol, runge_kutta_cash_karp54<…>()),
//!                 system, y0, {t0, t1, …}, dt = 0.1, observer,
//!                 max_step_checker(max_num_steps))
//! ```
//!
//! Unlike [`super::dopri5`] there is no dense output: each step is cut to
//! end exactly on the next output time (and the longer step size is
//! resumed afterwards). Error norm and step-size adjustment are those of
//! [`super::dopri5`] (orders 5 and 4): reject when
//! ‖xerrᵢ / (atol + rtol·(|xᵢ| + |dt|·|x′ᵢ|))‖∞ > 1 and shrink by
//! max(0.9·err^(−1/3), 1/5); on acceptance with err < 0.5 grow by
//! 0.9·max(err, 5⁻⁵)^(−1/5). More than 500 rejections in a row is
//! [`OdeError::StepSizeTooSmall`]; more than `max_num_steps` accepted steps
//! between outputs is [`OdeError::MaxNumSteps`].

use super::{OdeError, Tolerances, all_finite};

const INITIAL_STEP: f64 = 0.1;
const MAX_FAILED_TRIES: u32 = 500;

const A2: f64 = 1.0 / 5.0;
const A3: f64 = 3.0 / 10.0;
const A4: f64 = 3.0 / 5.0;
const A5: f64 = 1.0;
const A6: f64 = 7.0 / 8.0;
const B21: f64 = 1.0 / 5.0;
const B31: f64 = 3.0 / 40.0;
const B32: f64 = 9.0 / 40.0;
const B41: f64 = 3.0 / 10.0;
const B42: f64 = -9.0 / 10.0;
const B43: f64 = 6.0 / 5.0;
const B51: f64 = -11.0 / 54.0;
const B52: f64 = 5.0 / 2.0;
const B53: f64 = -70.0 / 27.0;
const B54: f64 = 35.0 / 27.0;
const B61: f64 = 1631.0 / 55296.0;
const B62: f64 = 175.0 / 512.0;
const B63: f64 = 575.0 / 13824.0;
const B64: f64 = 44275.0 / 110592.0;
const B65: f64 = 253.0 / 4096.0;
const C1: f64 = 37.0 / 378.0;
const C3: f64 = 250.0 / 621.0;
const C4: f64 = 125.0 / 594.0;
const C6: f64 = 512.0 / 1771.0;
const DC1: f64 = C1 - 2825.0 / 27648.0;
const DC3: f64 = C3 - 18575.0 / 48384.0;
const DC4: f64 = C4 - 13525.0 / 55296.0;
const DC5: f64 = -277.0 / 14336.0;
const DC6: f64 = C6 - 1.0 / 4.0;

/// Solve y' = f(t, y), y(t0) = y0 and return y at each of `ts` (sorted,
/// after `t0`).
pub fn integrate_times<E>(
    mut f: impl FnMut(f64, &[f64], &mut [f64]) -> Result<(), E>,
    y0: &[f64],
    t0: f64,
    ts: &[f64],
    tol: &Tolerances,
) -> Result<Vec<Vec<f64>>, OdeError<E>> {
    let n = y0.len();
    let mut out = Vec::with_capacity(ts.len());
    let mut x = y0.to_vec();
    let mut t = t0;
    let mut dt = INITIAL_STEP;
    let mut work = Work::new(n);
    for &target in ts {
        // Accepted steps since the last output (Boost's max_step_checker).
        let mut steps: u64 = 0;
        let mut failed = 0;
        while target - t > f64::EPSILON {
            let current_dt = dt.min(target - t);
            f(t, &x, &mut work.dxdt).map_err(OdeError::System)?;
            let (accepted, next_dt) = work.try_step(&mut f, &x, t, current_dt, tol)?;
            if accepted {
                t += current_dt;
                std::mem::swap(&mut x, &mut work.x_new);
                if !all_finite(&x) {
                    return Err(OdeError::NonFinite { time: t });
                }
                steps += 1;
                if steps > tol.max_num_steps {
                    return Err(OdeError::MaxNumSteps { time: target });
                }
                failed = 0;
                dt = dt.max(next_dt);
            } else {
                if failed >= MAX_FAILED_TRIES {
                    return Err(OdeError::StepSizeTooSmall { time: t });
                }
                failed += 1;
                dt = next_dt;
            }
        }
        out.push(x.clone());
    }
    Ok(out)
}

/// Scratch space of one step.
struct Work {
    n: usize,
    dxdt: Vec<f64>,
    k2: Vec<f64>,
    k3: Vec<f64>,
    k4: Vec<f64>,
    k5: Vec<f64>,
    k6: Vec<f64>,
    x_tmp: Vec<f64>,
    x_new: Vec<f64>,
    xerr: Vec<f64>,
}

impl Work {
    fn new(n: usize) -> Work {
        let z = || vec![0.0; n];
        Work {
            n,
            dxdt: z(),
            k2: z(),
            k3: z(),
            k4: z(),
            k5: z(),
            k6: z(),
            x_tmp: z(),
            x_new: z(),
            xerr: z(),
        }
    }

    /// A trial step of size `dt` from (t, x, dxdt) into `x_new`: (accepted,
    /// the adjusted step size).
    fn try_step<E>(
        &mut self,
        f: &mut impl FnMut(f64, &[f64], &mut [f64]) -> Result<(), E>,
        x: &[f64],
        t: f64,
        dt: f64,
        tol: &Tolerances,
    ) -> Result<(bool, f64), OdeError<E>> {
        let n = self.n;
        let d = &self.dxdt;
        for i in 0..n {
            self.x_tmp[i] = x[i] + dt * B21 * d[i];
        }
        f(t + dt * A2, &self.x_tmp, &mut self.k2).map_err(OdeError::System)?;
        for i in 0..n {
            self.x_tmp[i] = x[i] + dt * B31 * d[i] + dt * B32 * self.k2[i];
        }
        f(t + dt * A3, &self.x_tmp, &mut self.k3).map_err(OdeError::System)?;
        for i in 0..n {
            self.x_tmp[i] = x[i] + dt * B41 * d[i] + dt * B42 * self.k2[i] + dt * B43 * self.k3[i];
        }
        f(t + dt * A4, &self.x_tmp, &mut self.k4).map_err(OdeError::System)?;
        for i in 0..n {
            self.x_tmp[i] = x[i]
                + dt * B51 * d[i]
                + dt * B52 * self.k2[i]
                + dt * B53 * self.k3[i]
                + dt * B54 * self.k4[i];
        }
        f(t + dt * A5, &self.x_tmp, &mut self.k5).map_err(OdeError::System)?;
        for i in 0..n {
            self.x_tmp[i] = x[i]
                + dt * B61 * d[i]
                + dt * B62 * self.k2[i]
                + dt * B63 * self.k3[i]
                + dt * B64 * self.k4[i]
                + dt * B65 * self.k5[i];
        }
        f(t + dt * A6, &self.x_tmp, &mut self.k6).map_err(OdeError::System)?;
        let mut err: f64 = 0.0;
        for i in 0..n {
            self.x_new[i] = x[i]
                + dt * C1 * d[i]
                + dt * C3 * self.k3[i]
                + dt * C4 * self.k4[i]
                + dt * C6 * self.k6[i];
            self.xerr[i] = dt * DC1 * d[i]
                + dt * DC3 * self.k3[i]
                + dt * DC4 * self.k4[i]
                + dt * DC5 * self.k5[i]
                + dt * DC6 * self.k6[i];
            let e = self.xerr[i].abs()
                / (tol.absolute + tol.relative * (x[i].abs() + dt.abs() * d[i].abs()));
            if err < e {
                err = e;
            }
        }
        if err > 1.0 {
            let factor = 9.0 / 10.0 * err.powf(-1.0 / 3.0);
            return Ok((false, dt * if factor < 0.2 { 0.2 } else { factor }));
        }
        let mut next = dt;
        if err < 0.5 {
            let err = if 5.0_f64.powf(-5.0) < err {
                err
            } else {
                5.0_f64.powf(-5.0)
            };
            next = dt * (9.0 / 10.0 * err.powf(-1.0 / 5.0));
        }
        Ok((true, next))
    }
}
