// Recursion and loops only in generated quantities, so the gradient program
// has no user-function calls: `bat ir --emit pc` shows variable stacks.
functions {
  int fib(int n) {
    if (n < 2) return n;
    return fib(n - 1) + fib(n - 2);
  }
  int is_even(int n);
  int is_odd(int n) {
    if (n == 0) return 0;
    return is_even(n - 1);
  }
  int is_even(int n) {
    if (n == 0) return 1;
    return is_odd(n - 1);
  }
  real walk_rng(real x) {
    real s = x;
    int k = 0;
    while (1) {
      k += 1;
      if (k > 50) break;
      if (k % 3 == 0) continue;
      s += normal_rng(0, 1);
      if (s > 3) return s;
    }
    return -s;
  }
  // x is needed after the recursive call: it gets a stack.
  real rwalk_rng(real x, int d) {
    if (d == 0 || x > 2) return x;
    return rwalk_rng(x + normal_rng(0, 1), d - 1) + x * normal_rng(0, 0.1);
  }
}
parameters {
  real mu;
}
model {
  mu ~ normal(0, 1);
}
generated quantities {
  int f = fib(10);
  int e = is_even(7);
  real w = walk_rng(mu) + rwalk_rng(mu, 20);
}
