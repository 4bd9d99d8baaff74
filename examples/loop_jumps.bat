// A log density whose loops leave early: `break` and `continue` in the
// model block and in transformed parameters, in `for` and `while` loops,
// some with exits that depend on the parameters (so chains take different
// paths; those exits are where the density is continuous, so finite
// differences check the gradient). Observations are used up to the first
// one above the threshold; every fourth is skipped.
data {
  int<lower=1> N;
  vector[N] y;
  real threshold;
}
parameters {
  real mu;
  real<lower=0> sigma;
  real<lower=0, upper=1> rho;
}
transformed parameters {
  // Geometric partial sum of rho^k, stopped once the terms are tiny or
  // after 200 terms (the stopping point depends on rho).
  real geometric = 0;
  {
    real term = 1;
    int k = 0;
    while (1) {
      geometric += term;
      k += 1;
      if (k >= 200 || term < 1e-14) {
        break;
      }
      term *= rho;
    }
  }
}
model {
  mu ~ normal(0, 5);
  sigma ~ lognormal(0, 1);
  rho ~ beta(2, 2);
  target += -0.1 * geometric;
  for (n in 1:N) {
    if (n % 4 == 0) {
      continue;
    }
    y[n] ~ normal(mu, sigma);
    if (y[n] > threshold) {
      break;
    }
    target += 0.01 * log1p(square(y[n] - mu));
  }
  {
    real acc = 0;
    int n = 0;
    while (n < N) {
      n += 1;
      if (y[n] < 0) {
        continue;
      }
      acc += (y[n] - mu) * rho;
      if (n >= 7) {
        break;
      }
    }
    target += -0.5 * square(acc);
  }
}
