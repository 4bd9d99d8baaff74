functions {
  /**
   * Log density of a zero-inflated Poisson.
   * @param y count
   * @param theta zero-inflation probability
   * @return log probability mass
   */
  real zip_lpmf(int y, real theta, real lambda) {
    if (y == 0) {
      return log_sum_exp(bernoulli_lpmf(1 | theta),
                         bernoulli_lpmf(0 | theta) + poisson_lpmf(y | lambda));
    } else {
      return bernoulli_lpmf(0 | theta) + poisson_lpmf(y | lambda);
    }
  }

  // forward declaration, then a recursive definition
  int fib(int n);
  int fib(int n) {
    if (n < 2) return n;
    return fib(n - 1) + fib(n - 2);
  }

  real centered_lpdf(vector x, data real scale) {
    return normal_lupdf(x | 0, scale);
  }

  vector sample_rng(int n, real mu) {
    vector[n] draws;
    for (i in 1:n) draws[i] = normal_rng(mu, 1);
    return draws;
  }

  void check_positive(real x) {
    if (x <= 0) reject("x must be positive, found ", x);
  }

  real add_prior_lp(real x) {
    x ~ std_normal();
    return x;
  }

  real positive_jacobian(real x) {
    jacobian += x;
    return exp(x);
  }

  array[] real cumulative(array[] real xs) {
    return cumulative_sum(xs);
  }

  tuple(real, int) split_number(real x) {
    return (x - floor(x), to_int(floor(x)));
  }
}
data {
  int<lower=0> N;
  array[N] int<lower=0> y;
}
parameters {
  real<lower=0, upper=1> theta;
  real<lower=0> lambda;
  real z;
}
transformed parameters {
  real w = positive_jacobian(z);
}
model {
  check_positive(lambda);
  for (n in 1:N) {
    y[n] ~ zip(theta, lambda);
  }
  target += add_prior_lp(z);
}
generated quantities {
  int f10 = fib(10);
  vector[3] s = sample_rng(3, lambda);
  tuple(real, int) parts = split_number(lambda);
}
