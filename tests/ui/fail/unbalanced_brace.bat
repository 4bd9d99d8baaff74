// expect: syntax error
parameters {
  real mu;
}
model {
  for (i in 1:10) {
    mu ~ normal(0, 1);
}
