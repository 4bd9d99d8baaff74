// expect: semantic error
parameters {
  real mu;
}
model {
  mu ~ normal(0, 1);
}
generated quantities {
  target += normal_lpdf(mu | 0, 1);
}
