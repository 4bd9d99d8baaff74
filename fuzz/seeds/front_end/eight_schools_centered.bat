// Eight schools (Rubin 1981), centered parameterization.
// Known to have a funnel-shaped posterior that troubles HMC: compare with
// eight_schools_noncentered.bat.
data {
  int<lower=0> J;          // number of schools
  array[J] real y;         // estimated treatment effects
  array[J] real<lower=0> sigma;  // standard errors of the effects
}
parameters {
  real mu;
  real<lower=0> tau;
  array[J] real theta;
}
model {
  mu ~ normal(0, 5);
  tau ~ cauchy(0, 5);
  theta ~ normal(mu, tau);
  y ~ normal(theta, sigma);
}
