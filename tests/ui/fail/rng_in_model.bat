// expect: semantic error
parameters {
  real mu;
}
model {
  real noise = normal_rng(0, 1);
  mu ~ normal(noise, 1);
}
