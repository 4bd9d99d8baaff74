//! The integrators against closed-form solutions, sensitivities against
//! closed forms and finite differences, and the error cases.

use super::bdf::{self, StiffSystem};
use super::sensitivity::Coupled;
use super::{OdeError, Tolerances, cash_karp, dopri5};

type Rhs<'a> = &'a mut dyn FnMut(f64, &[f64], &mut [f64]) -> Result<(), String>;

fn tol(rel: f64, abs: f64) -> Tolerances {
    Tolerances {
        relative: rel,
        absolute: abs,
        max_num_steps: 1_000_000,
    }
}

/// A system given by its right-hand side and state Jacobian.
struct Linear {
    a: Vec<f64>,
    n: usize,
    evaluations: usize,
}

impl StiffSystem for Linear {
    type Error = String;
    fn rhs(&mut self, _t: f64, z: &[f64], dz: &mut [f64]) -> Result<(), String> {
        self.evaluations += 1;
        let n = self.n;
        for (block, out) in z.chunks(n).zip(dz.chunks_mut(n)) {
            for i in 0..n {
                out[i] = (0..n).map(|k| self.a[i * n + k] * block[k]).sum();
            }
        }
        Ok(())
    }
    fn jacobian(&mut self, _t: f64, _z: &[f64], jac: &mut [f64]) -> Result<(), String> {
        jac.copy_from_slice(&self.a);
        Ok(())
    }
    fn block(&self) -> usize {
        self.n
    }
}

/// Wraps a closure and a Jacobian closure as a [`StiffSystem`].
struct Closures<F, J> {
    f: F,
    j: J,
    n: usize,
}

impl<F, J> StiffSystem for Closures<F, J>
where
    F: FnMut(f64, &[f64], &mut [f64]) -> Result<(), String>,
    J: FnMut(f64, &[f64], &mut [f64]) -> Result<(), String>,
{
    type Error = String;
    fn rhs(&mut self, t: f64, z: &[f64], dz: &mut [f64]) -> Result<(), String> {
        (self.f)(t, z, dz)
    }
    fn jacobian(&mut self, t: f64, z: &[f64], jac: &mut [f64]) -> Result<(), String> {
        (self.j)(t, z, jac)
    }
    fn block(&self) -> usize {
        self.n
    }
}

type Solver = fn(Rhs, &[f64], f64, &[f64], &Tolerances) -> Result<Vec<Vec<f64>>, OdeError<String>>;

/// Each explicit integrator, by name.
fn explicit_solvers() -> Vec<(&'static str, Solver)> {
    vec![
        ("dopri5", |f, y0, t0, ts, tol| {
            dopri5::integrate_times(f, y0, t0, ts, tol)
        }),
        ("cash_karp", |f, y0, t0, ts, tol| {
            cash_karp::integrate_times(f, y0, t0, ts, tol)
        }),
    ]
}

fn assert_close(what: &str, got: f64, want: f64, rel: f64) {
    assert!(
        (got - want).abs() <= rel * want.abs().max(1e-3),
        "{what}: {got} vs exact {want}"
    );
}

#[test]
fn exponential_decay_matches_closed_form() {
    let ts: Vec<f64> = (1..=10).map(|i| i as f64 * 0.7).collect();
    for (name, solve) in explicit_solvers() {
        let mut f = |_t: f64, y: &[f64], dy: &mut [f64]| -> Result<(), String> {
            dy[0] = -1.3 * y[0];
            Ok(())
        };
        let ys = solve(&mut f, &[2.5], 0.5, &ts, &tol(1e-10, 1e-12)).unwrap();
        for (t, y) in ts.iter().zip(&ys) {
            assert_close(name, y[0], 2.5 * (-1.3 * (t - 0.5)).exp(), 1e-8);
        }
    }
}

#[test]
fn harmonic_oscillator_matches_closed_form() {
    // y'' = -ω² y, y(0) = 1, y'(0) = 0: y = cos ωt, y' = −ω sin ωt.
    let omega = 2.0;
    let ts: Vec<f64> = (1..=20).map(|i| i as f64 * 0.5).collect();
    for (name, solve) in explicit_solvers() {
        let mut f = |_t: f64, y: &[f64], dy: &mut [f64]| -> Result<(), String> {
            dy[0] = y[1];
            dy[1] = -omega * omega * y[0];
            Ok(())
        };
        let ys = solve(&mut f, &[1.0, 0.0], 0.0, &ts, &tol(1e-10, 1e-10)).unwrap();
        for (t, y) in ts.iter().zip(&ys) {
            assert!((y[0] - (omega * t).cos()).abs() < 1e-7, "{name} y({t})");
            assert!(
                (y[1] + omega * (omega * t).sin()).abs() < 2e-7,
                "{name} y'({t})"
            );
        }
    }
    let mut sys = Linear {
        a: vec![0.0, 1.0, -omega * omega, 0.0],
        n: 2,
        evaluations: 0,
    };
    let ys = bdf::integrate_times(&mut sys, &[1.0, 0.0], 0.0, &ts, &tol(1e-10, 1e-10)).unwrap();
    for (t, y) in ts.iter().zip(&ys) {
        assert!(
            (y[0] - (omega * t).cos()).abs() < 2e-6,
            "bdf y({t}) = {}",
            y[0]
        );
    }
}

/// y' = A y with eigenvalues −1 (eigenvector (1, 1)) and −1000 ((1, −1)).
fn stiff_matrix() -> Vec<f64> {
    vec![-500.5, 499.5, 499.5, -500.5]
}

fn stiff_exact(t: f64) -> [f64; 2] {
    // y(0) = (2, 0) = (1, 1) + (1, −1).
    let (slow, fast) = ((-t).exp(), (-1000.0 * t).exp());
    [slow + fast, slow - fast]
}

#[test]
fn bdf_solves_a_stiff_linear_system_in_few_steps() {
    let ts = [0.001, 0.01, 0.1, 1.0, 2.0, 5.0, 10.0];
    let mut sys = Linear {
        a: stiff_matrix(),
        n: 2,
        evaluations: 0,
    };
    let ys = bdf::integrate_times(&mut sys, &[2.0, 0.0], 0.0, &ts, &tol(1e-8, 1e-10)).unwrap();
    for (t, y) in ts.iter().zip(&ys) {
        let exact = stiff_exact(*t);
        for k in 0..2 {
            assert!(
                (y[k] - exact[k]).abs() <= 1e-6 * exact[k].abs() + 1e-9,
                "bdf y{k}({t}) = {} vs {}",
                y[k],
                exact[k]
            );
        }
    }
    // An explicit method is held to |h·λ| ≲ 3 by stability: at least
    // ~3000 steps of 6 evaluations over [0, 10]; BDF needs far fewer.
    let bdf_evals = sys.evaluations;
    let mut dopri_evals = 0;
    let a = stiff_matrix();
    let mut f = |_t: f64, y: &[f64], dy: &mut [f64]| -> Result<(), String> {
        dopri_evals += 1;
        dy[0] = a[0] * y[0] + a[1] * y[1];
        dy[1] = a[2] * y[0] + a[3] * y[1];
        Ok(())
    };
    dopri5::integrate_times(&mut f, &[2.0, 0.0], 0.0, &ts, &tol(1e-8, 1e-10)).unwrap();
    assert!(
        bdf_evals * 5 < dopri_evals,
        "bdf {bdf_evals} evaluations, dopri5 {dopri_evals}"
    );
}

#[test]
fn bdf_solves_a_nonlinear_stiff_problem() {
    // Robertson's chemical kinetics: no closed form, but mass is conserved
    // (y1 + y2 + y3 = 1) and the solution at t = 40 is known to 4 digits
    // (Hairer & Wanner): y1 = 0.7158, y3 = 0.2842.
    let mut sys = Closures {
        f: |_t: f64, y: &[f64], dy: &mut [f64]| -> Result<(), String> {
            dy[0] = -0.04 * y[0] + 1e4 * y[1] * y[2];
            dy[1] = 0.04 * y[0] - 1e4 * y[1] * y[2] - 3e7 * y[1] * y[1];
            dy[2] = 3e7 * y[1] * y[1];
            Ok(())
        },
        j: |_t: f64, y: &[f64], jac: &mut [f64]| -> Result<(), String> {
            jac.copy_from_slice(&[
                -0.04,
                1e4 * y[2],
                1e4 * y[1],
                0.04,
                -1e4 * y[2] - 6e7 * y[1],
                -1e4 * y[1],
                0.0,
                6e7 * y[1],
                0.0,
            ]);
            Ok(())
        },
        n: 3,
    };
    let ys =
        bdf::integrate_times(&mut sys, &[1.0, 0.0, 0.0], 0.0, &[40.0], &tol(1e-8, 1e-12)).unwrap();
    let y = &ys[0];
    assert!((y[0] + y[1] + y[2] - 1.0).abs() < 1e-7, "{y:?}");
    assert!((y[0] - 0.7158).abs() < 1e-4, "{y:?}");
    assert!((y[2] - 0.2842).abs() < 1e-4, "{y:?}");
}

/// Lotka–Volterra with θ = (α, β, γ, δ): f, ∂f/∂y, ∂f/∂θ.
fn lotka_volterra(theta: [f64; 4], y: &[f64]) -> ([f64; 2], [f64; 4], [f64; 8]) {
    let [a, b, g, d] = theta;
    let (u, v) = (y[0], y[1]);
    (
        [(a - b * v) * u, (-g + d * u) * v],
        [a - b * v, -b * u, d * v, -g + d * u],
        [u, -u * v, 0.0, 0.0, 0.0, 0.0, -v, u * v],
    )
}

const THETA: [f64; 4] = [0.55, 0.028, 0.8, 0.024];
const Y0: [f64; 2] = [33.0, 6.2];

/// The LV solution at `ts` (coupled with sensitivities when `coupled`) by
/// `method` ("dopri5", "cash_karp", "bdf").
fn solve_lv(
    method: &str,
    theta: [f64; 4],
    y0: [f64; 2],
    ts: &[f64],
    coupled: Coupled,
    t: &Tolerances,
) -> Vec<Vec<f64>> {
    let mut rhs = move |_t: f64, z: &[f64], dz: &mut [f64]| -> Result<(), String> {
        let (f, jy, jp) = lotka_volterra(theta, z);
        coupled.derivative(z, &f, &jy, &jp, dz);
        Ok(())
    };
    let z0 = coupled.initial(&y0);
    match method {
        "dopri5" => dopri5::integrate_times(&mut rhs, &z0, 0.0, ts, t).unwrap(),
        "cash_karp" => cash_karp::integrate_times(&mut rhs, &z0, 0.0, ts, t).unwrap(),
        _ => {
            let mut sys = Closures {
                f: rhs,
                j: move |_t: f64, z: &[f64], jac: &mut [f64]| -> Result<(), String> {
                    jac.copy_from_slice(&lotka_volterra(theta, z).1);
                    Ok(())
                },
                n: 2,
            };
            bdf::integrate_times(&mut sys, &z0, 0.0, ts, t).unwrap()
        }
    }
}

#[test]
fn sensitivities_match_finite_differences() {
    let ts = [1.0, 4.0, 9.5, 15.0];
    let coupled = Coupled {
        states: 2,
        initial_state: true,
        params: 4,
    };
    let plain = Coupled {
        states: 2,
        initial_state: false,
        params: 0,
    };
    for method in ["dopri5", "cash_karp", "bdf"] {
        let t = tol(1e-11, 1e-11);
        let z = solve_lv(method, THETA, Y0, &ts, coupled, &t);
        let fd = |theta: [f64; 4], y0: [f64; 2], j: usize, k: usize| {
            let h = 1e-6 * if j < 2 { y0[j] } else { theta[j - 2] };
            let (mut up_t, mut up_y, mut dn_t, mut dn_y) = (theta, y0, theta, y0);
            if j < 2 {
                up_y[j] += h;
                dn_y[j] -= h;
            } else {
                up_t[j - 2] += h;
                dn_t[j - 2] -= h;
            }
            let up = solve_lv(method, up_t, up_y, &ts, plain, &t);
            let dn = solve_lv(method, dn_t, dn_y, &ts, plain, &t);
            (0..ts.len())
                .map(|i| (up[i][k] - dn[i][k]) / (2.0 * h))
                .collect::<Vec<_>>()
        };
        for k in 0..2 {
            for j in 0..2 {
                let fd = fd(THETA, Y0, j, k);
                for (i, zi) in z.iter().enumerate() {
                    let s = coupled.wrt_initial(zi, j, k);
                    assert!(
                        (s - fd[i]).abs() <= 1e-4 * fd[i].abs().max(1e-2),
                        "{method}: dy{k}/dy0{j} at t={}: {s} vs fd {}",
                        ts[i],
                        fd[i]
                    );
                }
            }
            for j in 0..4 {
                let fd = fd(THETA, Y0, j + 2, k);
                for (i, zi) in z.iter().enumerate() {
                    let s = coupled.wrt_param(zi, j, k);
                    assert!(
                        (s - fd[i]).abs() <= 1e-4 * fd[i].abs().max(1e-2),
                        "{method}: dy{k}/dθ{j} at t={}: {s} vs fd {}",
                        ts[i],
                        fd[i]
                    );
                }
            }
        }
    }
}

#[test]
fn sensitivities_of_exponential_decay_match_closed_form() {
    // y' = −k y: ∂y/∂y0 = e^{−kt}, ∂y/∂k = −t·y0·e^{−kt}.
    let (k, y0) = (0.9, 3.0);
    let coupled = Coupled {
        states: 1,
        initial_state: true,
        params: 1,
    };
    let ts = [0.5, 1.0, 3.0];
    let mut rhs = |_t: f64, z: &[f64], dz: &mut [f64]| -> Result<(), String> {
        coupled.derivative(z, &[-k * z[0]], &[-k], &[-z[0]], dz);
        Ok(())
    };
    let z = dopri5::integrate_times(
        &mut rhs,
        &coupled.initial(&[y0]),
        0.0,
        &ts,
        &tol(1e-10, 1e-12),
    )
    .unwrap();
    for (t, zi) in ts.iter().zip(&z) {
        let e = (-k * t).exp();
        assert_close("y", zi[0], y0 * e, 1e-8);
        assert_close("dy/dy0", coupled.wrt_initial(zi, 0, 0), e, 1e-8);
        assert_close("dy/dk", coupled.wrt_param(zi, 0, 0), -t * y0 * e, 1e-8);
    }
}

#[test]
fn coupled_layout_is_stans() {
    let c = Coupled {
        states: 2,
        initial_state: true,
        params: 3,
    };
    assert_eq!(c.size(), 2 * (1 + 2 + 3));
    let z0 = c.initial(&[4.0, 5.0]);
    assert_eq!(
        z0,
        vec![4.0, 5.0, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    );
    let no_y0 = Coupled {
        initial_state: false,
        ..c
    };
    assert_eq!(no_y0.size(), 2 * 4);
    assert_eq!(
        no_y0.initial(&[4.0, 5.0]),
        vec![4.0, 5.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    );
}

#[test]
fn too_many_steps_is_an_error_naming_the_output_time() {
    let mut f = |_t: f64, y: &[f64], dy: &mut [f64]| -> Result<(), String> {
        dy[0] = y[1];
        dy[1] = -400.0 * y[0];
        Ok(())
    };
    let t = Tolerances {
        relative: 1e-8,
        absolute: 1e-8,
        max_num_steps: 40,
    };
    for (name, solve) in explicit_solvers() {
        let err = solve(&mut f, &[1.0, 0.0], 0.0, &[0.05, 50.0], &t).unwrap_err();
        assert_eq!(err, OdeError::MaxNumSteps { time: 50.0 }, "{name}");
    }
    let mut sys = Linear {
        a: vec![0.0, 1.0, -400.0, 0.0],
        n: 2,
        evaluations: 0,
    };
    // BDF starts at order 1 with a tiny step: it needs more steps to start.
    let t = Tolerances {
        max_num_steps: 300,
        ..t
    };
    let err = bdf::integrate_times(&mut sys, &[1.0, 0.0], 0.0, &[0.05, 50.0], &t).unwrap_err();
    assert_eq!(err, OdeError::MaxNumSteps { time: 50.0 });
}

#[test]
fn a_non_finite_state_is_an_error() {
    // y' = sqrt(0.5 − t) is NaN after t = 0.5.
    let mut f = |t: f64, _y: &[f64], dy: &mut [f64]| -> Result<(), String> {
        dy[0] = (0.5 - t).sqrt();
        Ok(())
    };
    for (name, solve) in explicit_solvers() {
        let err = solve(&mut f, &[0.0], 0.0, &[0.25, 1.0], &tol(1e-6, 1e-6)).unwrap_err();
        assert!(
            matches!(err, OdeError::NonFinite { time } if time > 0.5),
            "{name}: {err:?}"
        );
    }
}

/// y' = y², y(0) = 1 is 1/(1 − t): finite until t = 1, where it blows up.
/// Every solver serves the output at 0.5 and then stops at the
/// singularity with an error naming a time next to it (never a hang or a
/// wrong number): BDF's step size cannot be made small enough there, the
/// explicit solvers step into infinity.
#[test]
fn a_blow_up_stops_every_solver_at_the_singularity() {
    let near_one = |time: f64| (time - 1.0).abs() < 1e-3;
    let mut sys = Closures {
        f: |_t: f64, y: &[f64], dy: &mut [f64]| -> Result<(), String> {
            dy[0] = y[0] * y[0];
            Ok(())
        },
        j: |_t: f64, y: &[f64], jac: &mut [f64]| -> Result<(), String> {
            jac[0] = 2.0 * y[0];
            Ok(())
        },
        n: 1,
    };
    let err =
        bdf::integrate_times(&mut sys, &[1.0], 0.0, &[0.5, 2.0], &tol(1e-6, 1e-6)).unwrap_err();
    assert!(
        matches!(err, OdeError::StepSizeTooSmall { time } if near_one(time)),
        "bdf: {err:?}"
    );
    let mut f = |_t: f64, y: &[f64], dy: &mut [f64]| -> Result<(), String> {
        dy[0] = y[0] * y[0];
        Ok(())
    };
    for (name, solve) in explicit_solvers() {
        let err = solve(&mut f, &[1.0], 0.0, &[0.5, 2.0], &tol(1e-6, 1e-6)).unwrap_err();
        assert!(
            matches!(err, OdeError::NonFinite { time } if near_one(time)),
            "{name}: {err:?}"
        );
    }
}

#[test]
fn errors_of_the_system_are_passed_on() {
    let mut f = |t: f64, y: &[f64], dy: &mut [f64]| -> Result<(), String> {
        if t > 1.0 {
            return Err(format!("rejected at {t}"));
        }
        dy[0] = -y[0];
        Ok(())
    };
    for (name, solve) in explicit_solvers() {
        let err = solve(&mut f, &[1.0], 0.0, &[0.5, 2.0], &tol(1e-6, 1e-6)).unwrap_err();
        assert!(
            matches!(&err, OdeError::System(m) if m.starts_with("rejected at")),
            "{name}: {err:?}"
        );
    }
    let mut sys = Closures {
        f,
        j: |_t: f64, _y: &[f64], jac: &mut [f64]| -> Result<(), String> {
            jac[0] = -1.0;
            Ok(())
        },
        n: 1,
    };
    let err =
        bdf::integrate_times(&mut sys, &[1.0], 0.0, &[0.5, 2.0], &tol(1e-6, 1e-6)).unwrap_err();
    assert!(
        matches!(&err, OdeError::System(m) if m.starts_with("rejected at")),
        "{err:?}"
    );
}

#[test]
fn repeated_and_close_output_times_are_served() {
    let mut f = |_t: f64, y: &[f64], dy: &mut [f64]| -> Result<(), String> {
        dy[0] = -y[0];
        Ok(())
    };
    let ts = [1.0, 1.0, 1.0 + 1e-14, 3.0];
    for (name, solve) in explicit_solvers() {
        let ys = solve(&mut f, &[1.0], 0.0, &ts, &tol(1e-9, 1e-9)).unwrap();
        assert_eq!(ys.len(), 4, "{name}");
        assert_eq!(ys[0], ys[1], "{name}");
        assert_close(name, ys[3][0], (-3.0_f64).exp(), 1e-7);
    }
}
