//! Dormand–Prince 5(4) with dense output, as Boost.Odeint runs it for
//! Stan's `ode_rk45` / `integrate_ode_rk45`:
//!
//! ```text
//! integrate_times(make_dense_output(atol, rtol, runge_kutta_dopri5<…>()),
//!                 system, y0, {t0, t1, …}, dt = 0.1, observer,
//!                 max_step_checker(max_num_steps))
//! ```
//!
//! Reproduced operation for operation (coefficients computed as the same
//! double quotients, sums in the same order, `std::max` ignoring NaN as it
//! does), so the accepted steps, and therefore the solution, are Stan's to
//! rounding of the right-hand side:
//! - error of a trial step: ‖xerrᵢ / (atol + rtol·(|xᵢ| + |dt|·|x′ᵢ|))‖∞
//!   with the embedded 4th-order solution's difference `xerr` and x, x′ at
//!   the step's start;
//! - error > 1: reject, dt ← dt·max(0.9·err^(−1/3), 1/5); more than 500
//!   tries for one step is an error ([`OdeError::StepSizeTooSmall`]);
//! - accept: t ← t + dt, and if err < 0.5, dt ← dt·0.9·max(err, 5⁻⁵)^(−1/5);
//! - output times inside the last step are interpolated with Hairer's
//!   4th-order dense output of DOPRI5; the step that would pass the last
//!   output time is shortened to end on it;
//! - at most `max_num_steps` steps between two outputs
//!   ([`OdeError::MaxNumSteps`] names the output time not reached).
//!
//! Unlike Boost, a state that becomes infinite or NaN at an accepted step
//! stops the solve ([`OdeError::NonFinite`]) instead of propagating.

use super::{OdeError, Tolerances, all_finite};

/// Boost's initial step size as Stan passes it.
const INITIAL_STEP: f64 = 0.1;
/// Boost's `failed_step_checker` default: tries allowed for one step.
const MAX_TRIES: u32 = 500;

// Butcher tableau, as Boost computes it (double quotients).
const A2: f64 = 1.0 / 5.0;
const A3: f64 = 3.0 / 10.0;
const A4: f64 = 4.0 / 5.0;
const A5: f64 = 8.0 / 9.0;
const B21: f64 = 1.0 / 5.0;
const B31: f64 = 3.0 / 40.0;
const B32: f64 = 9.0 / 40.0;
const B41: f64 = 44.0 / 45.0;
const B42: f64 = -56.0 / 15.0;
const B43: f64 = 32.0 / 9.0;
const B51: f64 = 19372.0 / 6561.0;
const B52: f64 = -25360.0 / 2187.0;
const B53: f64 = 64448.0 / 6561.0;
const B54: f64 = -212.0 / 729.0;
const B61: f64 = 9017.0 / 3168.0;
const B62: f64 = -355.0 / 33.0;
const B63: f64 = 46732.0 / 5247.0;
const B64: f64 = 49.0 / 176.0;
const B65: f64 = -5103.0 / 18656.0;
const C1: f64 = 35.0 / 384.0;
const C3: f64 = 500.0 / 1113.0;
const C4: f64 = 125.0 / 192.0;
const C5: f64 = -2187.0 / 6784.0;
const C6: f64 = 11.0 / 84.0;
const DC1: f64 = C1 - 5179.0 / 57600.0;
const DC3: f64 = C3 - 7571.0 / 16695.0;
const DC4: f64 = C4 - 393.0 / 640.0;
const DC5: f64 = C5 - -92097.0 / 339200.0;
const DC6: f64 = C6 - 187.0 / 2100.0;
const DC7: f64 = -1.0 / 40.0;

/// Order of the step (5) and of its error estimate (4), as Boost uses them
/// in the step-size adjustment.
const STEPPER_ORDER: i32 = 5;
const ERROR_ORDER: i32 = 4;

/// Solve y' = f(t, y), y(t0) = y0 and return y at each of `ts` (sorted,
/// after `t0`). `f(t, y, dydt)` writes dy/dt.
pub fn integrate_times<E>(
    f: impl FnMut(f64, &[f64], &mut [f64]) -> Result<(), E>,
    y0: &[f64],
    t0: f64,
    ts: &[f64],
    tol: &Tolerances,
) -> Result<Vec<Vec<f64>>, OdeError<E>> {
    let mut out = Vec::with_capacity(ts.len());
    let Some(&last) = ts.last() else {
        return Ok(out);
    };
    let mut st = DenseStepper::new(f, y0, t0, INITIAL_STEP, tol);
    let mut next = 0;
    // Steps since the last output (Boost's max_step_checker, reset by the
    // observer, which also sees the initial state).
    let mut steps: u64 = 0;
    while next < ts.len() {
        while next < ts.len() && less_eq_with_sign(ts[next], st.t, st.dt) {
            out.push(st.calc_state(ts[next]));
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
        if !less_eq_with_sign(st.t + st.dt, last, st.dt) {
            // The last step ends exactly on the last output time.
            st.dt = last - st.t;
            st.deriv_ready = false;
        }
        st.do_step()?;
    }
    Ok(out)
}

/// `less_eq_with_sign` of Boost: t1 ≤ t2 up to machine epsilon, in the
/// direction of `dt`.
fn less_eq_with_sign(t1: f64, t2: f64, dt: f64) -> bool {
    if dt > 0.0 {
        t1 - t2 <= f64::EPSILON
    } else {
        t2 - t1 <= f64::EPSILON
    }
}

/// `std::max(a, b)`: `b` only if `a < b` (so a NaN `b` is ignored).
fn std_max(a: f64, b: f64) -> f64 {
    if a < b { b } else { a }
}

/// Boost's `dense_output_runge_kutta<controlled_runge_kutta<dopri5>>`.
struct DenseStepper<F> {
    f: F,
    n: usize,
    atol: f64,
    rtol: f64,
    t: f64,
    t_old: f64,
    dt: f64,
    x: Vec<f64>,
    dxdt: Vec<f64>,
    x_old: Vec<f64>,
    dxdt_old: Vec<f64>,
    /// False after (re)initialisation: dx/dt at the current state is
    /// recomputed before the next step.
    deriv_ready: bool,
    k2: Vec<f64>,
    k3: Vec<f64>,
    k4: Vec<f64>,
    k5: Vec<f64>,
    k6: Vec<f64>,
    x_tmp: Vec<f64>,
    xerr: Vec<f64>,
}

impl<F> DenseStepper<F> {
    fn new(f: F, y0: &[f64], t0: f64, dt: f64, tol: &Tolerances) -> Self {
        let n = y0.len();
        let zeros = || vec![0.0; n];
        DenseStepper {
            f,
            n,
            atol: tol.absolute,
            rtol: tol.relative,
            t: t0,
            t_old: t0,
            dt,
            x: y0.to_vec(),
            dxdt: zeros(),
            x_old: zeros(),
            dxdt_old: zeros(),
            deriv_ready: false,
            k2: zeros(),
            k3: zeros(),
            k4: zeros(),
            k5: zeros(),
            k6: zeros(),
            x_tmp: zeros(),
            xerr: zeros(),
        }
    }

    /// The state at `t` in the last step, by dense output.
    fn calc_state(&self, t: f64) -> Vec<f64> {
        const B1: f64 = C1;
        const B3: f64 = C3;
        const B4: f64 = C4;
        const B5: f64 = C5;
        const B6: f64 = C6;
        let dt = self.t - self.t_old;
        let theta = (t - self.t_old) / dt;
        let x1 = 5.0 * (2558722523.0 - 31403016.0 * theta) / 11282082432.0;
        let x3 = 100.0 * (882725551.0 - 15701508.0 * theta) / 32700410799.0;
        let x4 = 25.0 * (443332067.0 - 31403016.0 * theta) / 1880347072.0;
        let x5 = 32805.0 * (23143187.0 - 3489224.0 * theta) / 199316789632.0;
        let x6 = 55.0 * (29972135.0 - 7076736.0 * theta) / 822651844.0;
        let x7 = 10.0 * (7414447.0 - 829305.0 * theta) / 29380423.0;
        let theta_m_1 = theta - 1.0;
        let theta_sq = theta * theta;
        let a = theta_sq * (3.0 - 2.0 * theta);
        let b = theta_sq * theta_m_1;
        let c = theta_sq * theta_m_1 * theta_m_1;
        let d = theta * theta_m_1 * theta_m_1;
        let b1 = dt * (a * B1 - c * x1 + d);
        let b3 = dt * (a * B3 + c * x3);
        let b4 = dt * (a * B4 - c * x4);
        let b5 = dt * (a * B5 + c * x5);
        let b6 = dt * (a * B6 - c * x6);
        let b7 = dt * (b + c * x7);
        (0..self.n)
            .map(|i| {
                self.x_old[i]
                    + b1 * self.dxdt_old[i]
                    + b3 * self.k3[i]
                    + b4 * self.k4[i]
                    + b5 * self.k5[i]
                    + b6 * self.k6[i]
                    + b7 * self.dxdt[i]
            })
            .collect()
    }
}

impl<F, E> DenseStepper<F>
where
    F: FnMut(f64, &[f64], &mut [f64]) -> Result<(), E>,
{
    /// One accepted step (trying smaller steps until the error is small
    /// enough); the previous state becomes the old one.
    fn do_step(&mut self) -> Result<(), OdeError<E>> {
        if !self.deriv_ready {
            (self.f)(self.t, &self.x, &mut self.dxdt).map_err(OdeError::System)?;
            self.deriv_ready = true;
        }
        self.t_old = self.t;
        let mut tries = 0;
        loop {
            let accepted = self.try_step()?;
            if tries >= MAX_TRIES {
                return Err(OdeError::StepSizeTooSmall { time: self.t });
            }
            tries += 1;
            if accepted {
                break;
            }
        }
        std::mem::swap(&mut self.x, &mut self.x_old);
        std::mem::swap(&mut self.dxdt, &mut self.dxdt_old);
        if !all_finite(&self.x) || !all_finite(&self.dxdt) {
            return Err(OdeError::NonFinite { time: self.t });
        }
        Ok(())
    }

    /// Boost's FSAL `controlled_runge_kutta::try_step`: a trial step from
    /// (t, x, x′) into (x_old, dxdt_old); on success advances `t`; adjusts
    /// `dt` either way.
    fn try_step(&mut self) -> Result<bool, OdeError<E>> {
        self.stages()?;
        let dt = self.dt;
        let a_dxdt = dt.abs();
        let mut err: f64 = 0.0;
        for i in 0..self.n {
            let e = self.xerr[i].abs()
                / (self.atol + self.rtol * (self.x[i].abs() + a_dxdt * self.dxdt[i].abs()));
            err = std_max(err, e.abs());
        }
        if err > 1.0 {
            let exponent = -1.0 / f64::from(ERROR_ORDER - 1);
            self.dt = dt * std_max(9.0 / 10.0 * err.powf(exponent), 1.0 / 5.0);
            return Ok(false);
        }
        self.t += dt;
        if err < 0.5 {
            let err = std_max(5.0_f64.powf(-f64::from(STEPPER_ORDER)), err);
            let exponent = -1.0 / f64::from(STEPPER_ORDER);
            self.dt = dt * (9.0 / 10.0 * err.powf(exponent));
        }
        Ok(true)
    }

    /// The six stages of a step of size `dt` from (t, x, x′): the new state
    /// into `x_old`, its derivative into `dxdt_old`, the error into `xerr`.
    fn stages(&mut self) -> Result<(), OdeError<E>> {
        let (t, dt, n) = (self.t, self.dt, self.n);
        let (x, d) = (&self.x, &self.dxdt);
        for i in 0..n {
            self.x_tmp[i] = x[i] + dt * B21 * d[i];
        }
        (self.f)(t + dt * A2, &self.x_tmp, &mut self.k2).map_err(OdeError::System)?;
        for i in 0..n {
            self.x_tmp[i] = x[i] + dt * B31 * d[i] + dt * B32 * self.k2[i];
        }
        (self.f)(t + dt * A3, &self.x_tmp, &mut self.k3).map_err(OdeError::System)?;
        for i in 0..n {
            self.x_tmp[i] = x[i] + dt * B41 * d[i] + dt * B42 * self.k2[i] + dt * B43 * self.k3[i];
        }
        (self.f)(t + dt * A4, &self.x_tmp, &mut self.k4).map_err(OdeError::System)?;
        for i in 0..n {
            self.x_tmp[i] = x[i]
                + dt * B51 * d[i]
                + dt * B52 * self.k2[i]
                + dt * B53 * self.k3[i]
                + dt * B54 * self.k4[i];
        }
        (self.f)(t + dt * A5, &self.x_tmp, &mut self.k5).map_err(OdeError::System)?;
        for i in 0..n {
            self.x_tmp[i] = x[i]
                + dt * B61 * d[i]
                + dt * B62 * self.k2[i]
                + dt * B63 * self.k3[i]
                + dt * B64 * self.k4[i]
                + dt * B65 * self.k5[i];
        }
        (self.f)(t + dt, &self.x_tmp, &mut self.k6).map_err(OdeError::System)?;
        for i in 0..n {
            self.x_old[i] = x[i]
                + dt * C1 * d[i]
                + dt * C3 * self.k3[i]
                + dt * C4 * self.k4[i]
                + dt * C5 * self.k5[i]
                + dt * C6 * self.k6[i];
        }
        (self.f)(t + dt, &self.x_old, &mut self.dxdt_old).map_err(OdeError::System)?;
        for i in 0..n {
            self.xerr[i] = dt * DC1 * d[i]
                + dt * DC3 * self.k3[i]
                + dt * DC4 * self.k4[i]
                + dt * DC5 * self.k5[i]
                + dt * DC6 * self.k6[i]
                + dt * DC7 * self.dxdt_old[i];
        }
        Ok(())
    }
}
