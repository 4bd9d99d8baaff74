// User functions called with parameter arguments: recursion, mutual
// recursion, `return` from inside loops, and `_lp` functions that add to
// the target.
functions {
  // c[1] + x * (c[2] + x * (... c[K])) by recursion from coefficient k.
  real horner(vector c, real x, int k) {
    if (k == rows(c)) {
      return c[k];
    }
    return c[k] + x * horner(c, x, k + 1);
  }

  // Mutually recursive damped iterations.
  real ping(real x, real a, int n);
  real pong(real x, real a, int n) {
    if (n <= 0) {
      return x;
    }
    return a * sin(x) + ping(x, a, n - 1);
  }
  real ping(real x, real a, int n) {
    if (n <= 0) {
      return x;
    }
    return 0.5 * pong(x * a, a, n - 1);
  }

  // The first partial sum of exp(-k * s) that exceeds `level`, or the
  // whole sum: a return from inside a while loop inside a for loop.
  real first_exceeding(real s, real level, int K) {
    real total = 0;
    for (k in 1:K) {
      int j = 0;
      while (j < 2) {
        j += 1;
        total += exp(-k * s) / j;
        if (total > level) {
          return total;
        }
      }
    }
    return total;
  }

  // Adds a prior to the target; its value is the log scale.
  real scale_prior_lp(real sigma) {
    sigma ~ lognormal(0, 1);
    return log(sigma);
  }

  // A void `_lp` function that recurses.
  void shrink_lp(vector v, real tau, int k) {
    if (k > rows(v)) {
      return;
    }
    target += normal_lpdf(v[k] | 0, tau);
    if (k == 1) {
      target += 1e-3 * tanh(v[k] * tau);
    }
    shrink_lp(v, tau, k + 1);
  }
}
data {
  int<lower=1> N;
  vector[N] x;
  vector[N] y;
}
parameters {
  vector[3] c;
  real<lower=0> sigma;
  real<lower=0, upper=1> a;
  real<lower=0> s;
}
model {
  real log_sigma = scale_prior_lp(sigma);
  shrink_lp(c, 2, 1);
  a ~ beta(2, 2);
  s ~ gamma(2, 2);
  for (n in 1:N) {
    y[n] ~ normal(horner(c, x[n], 1), sigma);
  }
  target += -0.1 * square(ping(c[1], a, 5));
  target += log(first_exceeding(s, 1.5, 4)) - 0.01 * log_sigma;
}
