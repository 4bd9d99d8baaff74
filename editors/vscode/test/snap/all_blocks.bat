functions {
  real scaled(real x, real s) {
    return x / s;
  }
}
data {
  int<lower=0> N;
  int<lower=1> K;
  int<lower=1> D;
  matrix[N, K] X;
  vector[N] y;
  array[N] int<lower=0, upper=1> flag;
  real<lower=-1, upper=(K > 2 ? 1 : 2)> bound;
}
transformed data {
  real eps = 1e-8;
  real big = 2.5E+10;
  real small = .5;
  real trailing = 3.;
  int half = N %/% 2;
  int rem = N % 2;
  matrix[K, K] XtX = X' * X;
  vector[K] coef = XtX \ (X' * y);
  row_vector[K] r = coef';
  vector[N] sq = y .* y ./ (1 + y .^ 2);
}
parameters {
  real alpha;
  vector<offset=0, multiplier=10>[K] beta;
  real<lower=0> sigma;
  simplex[K] weights;
  unit_vector[D] direction;
  sum_to_zero_vector[K] effects;
  sum_to_zero_matrix[K, D] interactions;
  ordered[K] cutpoints;
  positive_ordered[K] rates;
  cholesky_factor_corr[D] L_Omega;
  cholesky_factor_cov[D] L_Sigma;
  corr_matrix[D] Omega;
  cov_matrix[D] Sigma;
  column_stochastic_matrix[K, K] P_col;
  row_stochastic_matrix[K, K] P_row;
}
transformed parameters {
  vector[N] mu = alpha + X * beta;
}
model {
  profile("priors") {
    alpha ~ normal(0, 10);
    sigma ~ exponential(1);
    L_Omega ~ lkj_corr_cholesky(2);
  }
  if (N > 0 && sigma >= 0 || !(K == 1)) {
    y ~ normal(mu, sigma);
  } else if (N != 0) {
    reject("unreachable");
  } else {
    fatal_error("no data");
  }
  int i = 1;
  while (i <= N) {
    if (flag[i] == 0) {
      i += 1;
      continue;
    }
    i *= 2;
    if (i > 100) break;
  }
  target += -0.5 * dot_self(beta);
}
generated quantities {
  real scaled_alpha = scaled(alpha, sigma);
  array[N] real y_rep = normal_rng(mu, sigma);
  print("alpha = ", alpha);
}
