// A 100-dimensional correlated Gaussian: x ~ multivariate normal with mean
// mu and the AR(1) covariance Sigma[i, j] = rho^|i - j| (rho = 0.9 in the
// data file). The log density is a quadratic form in the precision matrix,
// so each gradient costs one dense matrix-vector product.
data {
  int<lower=1> D;
  real<lower=-1, upper=1> rho;
}
transformed data {
  // The precision of the AR(1) covariance is tridiagonal; it is stored
  // dense here, as a general precision matrix would be.
  matrix[D, D] P = rep_matrix(0, D, D);
  for (i in 1:D) {
    P[i, i] = (i == 1 || i == D) ? 1 : 1 + square(rho);
    if (i > 1) {
      P[i, i - 1] = -rho;
      P[i - 1, i] = -rho;
    }
  }
  P = P / (1 - square(rho));
  vector[D] mu = linspaced_vector(D, -1, 1);
}
parameters {
  vector[D] x;
}
model {
  vector[D] r = x - mu;
  target += -0.5 * dot_product(r, P * r);
}
