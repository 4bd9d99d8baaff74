// expect: semantic error
data {
  int<lower=0> N;
  vector[N] y;
}
parameters {
  real mu;
  real<lower=0> mu;
}
model {
  y ~ normal(mu, 1);
}
