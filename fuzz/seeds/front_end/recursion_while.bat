// A log density whose evaluation uses a while loop and a recursive user
// function: a zero-truncated Poisson likelihood where the normalizing
// constant log(1 - exp(-lambda)) is computed by a series summed in a
// while loop, and the log factorial of the counts by recursion.
// Exercises control flow that differs between chains (the number of loop
// iterations depends on the parameter).
functions {
  // log(n!) by recursion; n >= 0.
  real log_factorial(int n) {
    if (n <= 1) {
      return 0;
    }
    return log(n) + log_factorial(n - 1);
  }

  // log(1 - exp(-lambda)) = log(sum_{k>=1} lambda^k / k!) - lambda,
  // summed until the terms stop mattering.
  real log_truncation_mass(real lambda) {
    real term = lambda;  // lambda^1 / 1!
    real total = 0;
    int k = 1;
    while (term > 1e-16 * total || k == 1) {
      total += term;
      k += 1;
      term *= lambda / k;
      if (k > 1000) {
        break;
      }
    }
    return log(total) - lambda;
  }
}
data {
  int<lower=0> N;
  array[N] int<lower=1> counts;
}
parameters {
  real<lower=0> lambda;
}
model {
  lambda ~ gamma(2, 0.5);
  for (n in 1:N) {
    target += counts[n] * log(lambda) - lambda - log_factorial(counts[n])
              - log_truncation_mass(lambda);
  }
}
