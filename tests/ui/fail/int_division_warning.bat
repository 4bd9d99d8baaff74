// expect: warning
data {
  int<lower=1> N;
  int<lower=0> K;
}
transformed data {
  real ratio = K / N;
}
