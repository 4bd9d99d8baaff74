// Varying-intercept, varying-slope model (Gelman & Hill's radon example):
// log radon in house i of county j(i), with a floor indicator as predictor.
// Correlated county effects through an LKJ prior on their correlation.
data {
  int<lower=1> N;                         // houses
  int<lower=1> J;                         // counties
  array[N] int<lower=1, upper=J> county;
  vector[N] floor_measure;                // 0 = basement, 1 = first floor
  vector[N] log_radon;
}
parameters {
  vector[2] mu_beta;                      // population intercept and slope
  vector<lower=0>[2] tau;                 // county-level scales
  cholesky_factor_corr[2] L_Omega;
  matrix[2, J] z;                         // standardized county effects
  real<lower=0> sigma_y;
}
transformed parameters {
  // Non-centered: beta[j] = mu_beta + diag(tau) * L_Omega * z[, j].
  matrix[J, 2] beta = rep_matrix(mu_beta', J)
                      + (diag_pre_multiply(tau, L_Omega) * z)';
}
model {
  vector[N] mu;
  mu_beta ~ normal(0, 5);
  tau ~ exponential(1);
  L_Omega ~ lkj_corr_cholesky(2);
  to_vector(z) ~ std_normal();
  sigma_y ~ exponential(1);
  for (n in 1:N) {
    mu[n] = beta[county[n], 1] + beta[county[n], 2] * floor_measure[n];
  }
  log_radon ~ normal(mu, sigma_y);
}
generated quantities {
  corr_matrix[2] Omega = multiply_lower_tri_self_transpose(L_Omega);
}
