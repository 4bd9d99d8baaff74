// expect: semantic error
functions {
  real clamp_positive(real x) {
    if (x > 0) {
      return x;
    }
  }
}
parameters {
  real mu;
}
model {
  mu ~ normal(clamp_positive(1.0), 1);
}
