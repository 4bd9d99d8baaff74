// expect: semantic error
data {
  int<lower=0> N;
  vector[N] y;
}
parameters {
  real mu;
}
model {
  y[1] = 0;
  y ~ normal(mu, 1);
}
