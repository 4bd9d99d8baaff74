// Bayesian logistic regression with a dense design matrix.
// Data: scripts/gen_logistic_data.py writes logistic_regression.data.json
// (N = 10,000 observations, D = 100 predictors, fixed seed).
data {
  int<lower=0> N;
  int<lower=1> D;
  matrix[N, D] X;
  array[N] int<lower=0, upper=1> y;
}
parameters {
  real alpha;
  vector[D] beta;
}
model {
  alpha ~ normal(0, 2.5);
  beta ~ normal(0, 1);
  y ~ bernoulli_logit(alpha + X * beta);
}
generated quantities {
  // In-sample log likelihood, e.g. for PSIS-LOO.
  real log_lik = bernoulli_logit_lpmf(y | alpha + X * beta);
}
