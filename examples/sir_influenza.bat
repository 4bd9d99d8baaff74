// SIR epidemic model of the 1978 influenza outbreak in an English boarding
// school (763 pupils; daily number of pupils in bed), solved with
// `ode_rk45`: the log density differentiates through the ODE solution
// (forward sensitivities with respect to beta and gamma).
functions {
  vector sir(real t, vector y, real beta, real gamma, int N) {
    real infection = beta * y[1] * y[2] / N;
    real recovery = gamma * y[2];
    return [-infection, infection - recovery, recovery]';
  }
}
data {
  int<lower=1> n_days;
  array[n_days] real ts;
  int<lower=1> N;
  array[n_days] int<lower=0> cases;
}
transformed data {
  real t0 = 0;
  vector[3] y0 = [N - 1, 1, 0]';
}
parameters {
  real<lower=0> beta;
  real<lower=0> gamma;
  real<lower=0> phi_inv;
}
transformed parameters {
  array[n_days] vector[3] y = ode_rk45(sir, y0, t0, ts, beta, gamma, N);
  real phi = 1 / phi_inv;
}
model {
  beta ~ normal(2, 1);
  gamma ~ normal(0.4, 0.5);
  phi_inv ~ exponential(5);
  for (d in 1:n_days) {
    cases[d] ~ neg_binomial_2(fmax(y[d, 2], 1e-6), phi);
  }
}
generated quantities {
  real R0 = beta / gamma;
  real recovery_time = 1 / gamma;
}
