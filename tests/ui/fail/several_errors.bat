// expect: semantic error
// Four independent problems: all should be reported, not only the first.
data {
  int<lower=0> N;
  vector[N] y;
}
parameters {
  real mu;
  real<lower=0> sigma;
}
model {
  int count = 2.5;
  mu ~ normal(0, scale);
  sigma = 1;
  y ~ normal(mu, sigma);
  target += undefined_function(mu);
}
