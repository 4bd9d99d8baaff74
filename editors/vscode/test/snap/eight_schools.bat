// Eight schools, non-centered parameterization (Rubin 1981; Gelman et al. BDA3 5.5).
data {
  int<lower=0> J;          // number of schools
  array[J] real y;         // estimated treatment effects
  array[J] real<lower=0> sigma; // standard errors of the effects
}
parameters {
  real mu;
  real<lower=0> tau;
  vector[J] theta_tilde;
}
transformed parameters {
  vector[J] theta = mu + tau * theta_tilde;
}
model {
  mu ~ normal(0, 5);
  tau ~ cauchy(0, 5);
  theta_tilde ~ std_normal();
  y ~ normal(theta, sigma);
}
generated quantities {
  array[J] real y_rep = normal_rng(theta, sigma);
  vector[J] log_lik;
  for (j in 1:J) {
    log_lik[j] = normal_lpdf(y[j] | theta[j], sigma[j]);
  }
}
