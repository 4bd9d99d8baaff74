/* A block comment before the program.
   It spans lines and mentions model { } and real<lower=0> without effect. */
#include "helpers.stan"
#include <lib/priors.stan>
#include more_functions.stan
functions {
  /** Documented helper. @return twice x */
  real twice(real x) { return 2 * x; } // trailing comment
}
data {
  int N; /* inline block comment */ int M;
  # an old-style comment (removed in Stan 2.33)
}
model {
  print("strings keep // and /* as text: ", N, " ", M);
  /**/
  // target += 1;
}
