//! Forward sensitivities: the coupled system whose solution carries, beside
//! y(t), the derivatives ∂y(t)/∂y₀ and ∂y(t)/∂θ, in Stan's layout
//! (`coupled_ode_system`), so that one solve with the ODE's own tolerances
//! gives the values and the gradient, as Stan computes them.
//!
//! With S = ∂y/∂y₀ (n × n) and P = ∂y/∂θ (n × m):
//!
//! ```text
//! y′ = f(t, y, θ)            y(t₀) = y₀
//! S′ = J_y S                 S(t₀) = I
//! P′ = J_y P + J_θ           P(t₀) = 0
//! ```
//!
//! with J_y = ∂f/∂y and J_θ = ∂f/∂θ at (t, y(t)). The coupled state z is
//! `[y, S by column (∂y/∂y₀ⱼ for j = 1…n), P by column (∂y/∂θⱼ)]`: element
//! `n + n·j + k` is ∂y_k/∂y₀ⱼ, element `n + n·n₀ + n·j + k` is ∂y_k/∂θⱼ
//! (n₀ = n when the initial state is differentiated, else 0). The error
//! control of the integrator covers every element, as in Stan.

/// Shape of a coupled system.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Coupled {
    /// Number of states n.
    pub states: usize,
    /// Whether ∂y/∂y₀ is carried.
    pub initial_state: bool,
    /// Number m of parameters θ.
    pub params: usize,
}

impl Coupled {
    /// Number of sensitivity columns (n₀ + m).
    pub fn columns(&self) -> usize {
        self.initial_columns() + self.params
    }

    fn initial_columns(&self) -> usize {
        if self.initial_state { self.states } else { 0 }
    }

    /// Length of the coupled state: n·(1 + n₀ + m).
    pub fn size(&self) -> usize {
        self.states * (1 + self.columns())
    }

    /// True when nothing is differentiated (the coupled system is y alone).
    pub fn is_plain(&self) -> bool {
        self.columns() == 0
    }

    /// z(t₀): y₀, then the identity, then zeros.
    pub fn initial(&self, y0: &[f64]) -> Vec<f64> {
        let n = self.states;
        let mut z = vec![0.0; self.size()];
        z[..n].copy_from_slice(y0);
        for j in 0..self.initial_columns() {
            z[n + n * j + j] = 1.0;
        }
        z
    }

    /// dz/dt at z given f(t, y) and the Jacobians at (t, y), both
    /// row-major: `jy[i·n + k]` = ∂fᵢ/∂y_k, `jp[i·m + j]` = ∂fᵢ/∂θⱼ.
    /// Sums run in Stan's order, so the result is Stan's to the bit.
    pub fn derivative(&self, z: &[f64], f: &[f64], jy: &[f64], jp: &[f64], dz: &mut [f64]) {
        let n = self.states;
        let n0 = self.initial_columns();
        dz[..n].copy_from_slice(&f[..n]);
        for i in 0..n {
            let row = &jy[i * n..(i + 1) * n];
            for j in 0..n0 {
                let mut acc = 0.0;
                for (k, &jik) in row.iter().enumerate() {
                    acc += z[n + n * j + k] * jik;
                }
                dz[n + n * j + i] = acc;
            }
            for j in 0..self.params {
                let mut acc = jp[i * self.params + j];
                for (k, &jik) in row.iter().enumerate() {
                    acc += z[n + n * n0 + n * j + k] * jik;
                }
                dz[n + n * n0 + n * j + i] = acc;
            }
        }
    }

    /// ∂y_k/∂y₀ⱼ in a coupled state (requires `initial_state`).
    pub fn wrt_initial(&self, z: &[f64], j: usize, k: usize) -> f64 {
        z[self.states + self.states * j + k]
    }

    /// ∂y_k/∂θⱼ in a coupled state.
    pub fn wrt_param(&self, z: &[f64], j: usize, k: usize) -> f64 {
        let n = self.states;
        z[n + n * self.initial_columns() + n * j + k]
    }
}
