// expect: syntax error
parameters {
  real mu
  real<lower=0> sigma;
}
model {
  mu ~ normal(0, sigma);
}
