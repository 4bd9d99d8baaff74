// Every kind of data declaration the data reader conforms JSON to: sizes
// read from the data itself, bounds, constrained matrices, arrays of
// containers, complex numbers and tuples.
data {
  int<lower=0> N;
  int<lower=0, upper=3> K;
  real<lower=-1, upper=1> r;
  array[N] int<lower=0> counts;
  vector<lower=0>[N] v;
  row_vector[K] rv;
  matrix[K, N] m;
  array[K, 2] real a;
  array[2] vector[K] av;
  simplex[K] s;
  unit_vector[2] u;
  ordered[K] o;
  positive_ordered[K] po;
  cov_matrix[K] S;
  corr_matrix[K] C;
  cholesky_factor_cov[K] L;
  cholesky_factor_corr[K] Lc;
  sum_to_zero_vector[K] z;
  complex c;
  complex_vector[K] cv;
  tuple(int, array[K] real) t;
  array[2] tuple(real, vector[2]) at;
}
transformed data {
  real total = sum(v) + sum(counts) + r;
}
parameters {
  real mu;
}
model {
  mu ~ normal(total, 1);
}
