functions {
  real a_function_with_a_long_name(real first_argument, vector second_argument, data array[] int third_argument) { return first_argument; }
}
data { int N; vector[N] weight; vector[N] diam1; vector[N] diam2; vector[N] canopy_height; vector[N] total_height; }
parameters { vector[6] beta; real<lower=0> sigma; }
model {
  weight ~ normal(beta[1] + beta[2] * diam1 + beta[3] * diam2 + beta[4] * canopy_height + beta[5] * total_height, sigma);
  target += normal_lpdf(weight | beta[1] + beta[2] * diam1 + beta[3] * diam2, sigma) + normal_lpdf(beta | 0, 1);
  if (sigma > 1 && beta[1] > 0 && beta[2] > 0 && beta[3] > 0 && beta[4] > 0 && beta[5] > 0) {
    target += 0;
  }
}
