//! The compiled system functions ([`Tape`]) against the interpreter: f to
//! the bit, and the Jacobians against the AD-made reverse function's
//! (one reverse pass per state) to rounding.

use super::*;
use language::mir::visit::for_each_program_expr;
use language::mir::{Expr, ExprKind};

/// The first ODE solve of `source`'s model.
fn first_solve(source: &str) -> (Program, OdeSolve) {
    let mut program = match language::compile_model(source, "m") {
        (Some(p), _) => p,
        (None, d) => panic!("{d:?}"),
    };
    let mut found = None;
    for_each_program_expr(&mut program, &mut |e: &mut Expr| {
        if let ExprKind::Ode(call) = &e.kind
            && found.is_none()
        {
            found = Some((**call).clone());
        }
    });
    (program, found.expect("a solve"))
}

/// Deterministic numbers in [lo, hi).
struct Uniform(u64);

impl Uniform {
    fn next(&mut self, lo: f64, hi: f64) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        lo + (hi - lo) * ((self.0 >> 11) as f64 / (1u64 << 53) as f64)
    }
}

/// Compare the tape and the interpreter on `source`'s first solve with
/// system arguments `args` at many (t, y).
fn check(source: &str, args: &[Value]) {
    let (program, call) = first_solve(source);
    // Every system here has two states.
    let coupled = coupled_system(&call, args, 2);
    assert!(!coupled.is_plain(), "the solve has sensitivities");
    let mut compiled = System::new(&program, &call, args, coupled).unwrap();
    assert!(compiled.tape.is_some(), "the system compiles to a tape");
    interpret_ode_systems(true);
    let mut interpreted = System::new(&program, &call, args, coupled).unwrap();
    interpret_ode_systems(false);
    assert!(interpreted.tape.is_none());
    let mut u = Uniform(7);
    for _ in 0..200 {
        let t = u.next(0.0, 3.0);
        let y = [u.next(0.3, 2.0), u.next(0.3, 2.0)];
        let f = compiled.derivative(t, &y).unwrap();
        let f_ref = interpreted.derivative(t, &y).unwrap();
        assert_eq!(
            f.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
            f_ref.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
            "f at t = {t}, y = {y:?}: {f:?} vs {f_ref:?}"
        );
        compiled.jacobians(t, &y).unwrap();
        interpreted.jacobians(t, &y).unwrap();
        for (what, ours, theirs) in [
            ("∂f/∂y", &compiled.jy, &interpreted.jy),
            ("∂f/∂θ", &compiled.jp, &interpreted.jp),
        ] {
            assert_eq!(ours.len(), theirs.len());
            for (k, (a, b)) in ours.iter().zip(theirs.iter()).enumerate() {
                assert!(
                    (a - b).abs() <= 1e-14 * b.abs().max(1.0),
                    "{what}[{k}] at t = {t}, y = {y:?}: {a} vs reverse pass {b}"
                );
            }
        }
        // The coupled right-hand side goes through the same Jacobians.
        let z: Vec<f64> = (0..coupled.size()).map(|_| u.next(-1.0, 1.0)).collect();
        let (mut dz, mut dz_ref) = (vec![0.0; z.len()], vec![0.0; z.len()]);
        compiled.rhs(t, &z, &mut dz).unwrap();
        interpreted.rhs(t, &z, &mut dz_ref).unwrap();
        for (a, b) in dz.iter().zip(&dz_ref) {
            assert!(
                (a - b).abs() <= 1e-13 * b.abs().max(1.0),
                "{dz:?} vs {dz_ref:?}"
            );
        }
    }
}

#[test]
fn lotka_volterra_legacy_interface() {
    let source = r#"
functions {
  array[] real dz_dt(real t, array[] real z, array[] real theta,
                     array[] real x_r, array[] int x_i) {
    real u = z[1];
    real v = z[2];
    real alpha = theta[1];
    real beta = theta[2];
    real gamma = theta[3];
    real delta = theta[4];
    real du_dt = (alpha - beta * v) * u;
    real dv_dt = (-gamma + delta * u) * v;
    return {du_dt, dv_dt};
  }
}
data { array[3] real ts; }
parameters { array[4] real<lower=0> theta; array[2] real<lower=0> z0; }
model {
  array[3, 2] real z = integrate_ode_rk45(dz_dt, z0, 0, ts, theta,
                                          rep_array(0.0, 0), rep_array(0, 0));
  target += z[1, 1];
}
"#;
    let theta = Value::Array([0.55, 0.028, 0.8, 0.024].map(Value::Real).to_vec());
    check(
        source,
        &[theta, Value::Array(Vec::new()), Value::Array(Vec::new())],
    );
}

/// Every operation the tape knows, ints promoted, reassignment, data and
/// parameter arguments of every supported shape, a vector literal.
#[test]
fn every_operation_with_mixed_arguments() {
    let source = r#"
functions {
  vector sys(real t, vector y, real a, vector b, array[] real c, int k,
             array[] int ks) {
    real p = exp(-a * t) + sqrt(b[1]);
    real q = log(y[1] * y[1] + 1) / k;
    q = q - square(b[2]) * c[1] * ks[2];
    real r = p * y[2] - q / (1 + y[1]);
    return [r, -p + q * c[2] - b[1] / y[2] + 2.5]';
  }
}
data { array[3] real ts; array[2] real c; int k; array[2] int ks; }
parameters { real a; vector<lower=0>[2] b; vector[2] y0; }
model {
  array[3] vector[2] ys = ode_rk45(sys, y0, 0, ts, a, b, c, k, ks);
  target += ys[1][1];
}
"#;
    check(
        source,
        &[
            Value::Real(0.7),
            Value::Vector(vec![1.3, 0.4]),
            Value::Array(vec![Value::Real(0.2), Value::Real(1.5)]),
            Value::Int(3),
            Value::Array(vec![Value::Int(2), Value::Int(-4)]),
        ],
    );
}

/// Container arithmetic is left to the interpreter.
#[test]
fn unsupported_functions_are_interpreted() {
    let source = r#"
functions {
  vector decay(real t, vector y, real k) { return -k * y; }
}
data { array[3] real ts; }
parameters { real k; vector[2] y0; }
model {
  array[3] vector[2] ys = ode_rk45(decay, y0, 0, ts, k);
  target += ys[1][1];
}
"#;
    let (program, call) = first_solve(source);
    let args = [Value::Real(0.5)];
    let coupled = coupled_system(&call, &args, 2);
    let system = System::new(&program, &call, &args, coupled).unwrap();
    assert!(system.tape.is_none());
}
