// expect: semantic error
data {
  int<lower=0> N;
  vector[N] x;
}
transformed data {
  real total;
  total = x;
}
