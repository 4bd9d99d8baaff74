// expect: semantic error
data {
  int<lower=0> N;
  vector[N] x;
  array[N] int k;
}
transformed data {
  real d = dot_product(x, k, 2);
}
