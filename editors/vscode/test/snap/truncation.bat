data {
  int<lower=0> N;
  real U;
  array[N] real<upper=U> y;
  array[N] int<lower=1> counts;
}
parameters {
  real mu;
  real<lower=0> sigma;
  real<lower=0> lambda;
}
model {
  mu ~ normal(0, 10);
  sigma ~ student_t(3, 0, 2.5);
  lambda ~ gamma(2, 0.1);
  for (n in 1:N) {
    y[n] ~ normal(mu, sigma) T[, U];
    counts[n] ~ poisson(lambda) T[1, ];
  }
  // the same truncation written out by hand
  target += normal_lpdf(y | mu, sigma) - N * normal_lcdf(U | mu, sigma);
  target += poisson_lpmf(counts | lambda) - N * poisson_lccdf(0 | lambda);
  mu ~ normal(0, 1)T[-5, 5];
}
