// expect: syntax error
paramters {
  real mu;
}
model {
  mu ~ normal(0, 1);
}
