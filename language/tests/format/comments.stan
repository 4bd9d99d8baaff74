// A file header.
/* with a block comment */
data {   // after the brace
  int<lower=0> N;   // trailing
  /* before a declaration */ vector[N] y;


  // a blank line above is kept (one of two)
}
transformed data {
  real x /* inside */ = 1; /* two */ // trailing comments
}
model {
  y ~ normal(0, // inside a call
             1);
  for (n in 1:N) // after a loop header
    target += 0;
  /* before the closing brace */
}
// the end
