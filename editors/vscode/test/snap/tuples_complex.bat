data {
  int<lower=1> N;
  tuple(int, array[N] real) counted;
  tuple(real, tuple(int, vector[N])) nested;
  complex z0;
  complex_vector[N] zv;
  complex_row_vector[N] zr;
  complex_matrix[N, N] zm;
}
transformed data {
  int n = counted.1;
  array[N] real xs = counted.2;
  vector[N] inner = nested.2.2;
  complex z = 3 + 2i;
  complex w = to_complex(1.5, -0.25);
  complex u = 1.5e-3i * z;
  complex_vector[N] spectrum = fft(to_complex(inner, rep_vector(0, N)));
  real magnitude = abs(z) + get_real(w) + get_imag(u);
  tuple(real, int) pair = (magnitude, n);
  matrix[N, N] re = get_real(zm * zm');
}
parameters {
  real<lower=0> sigma;
}
model {
  sigma ~ exponential(1);
}
generated quantities {
  tuple(real, real) moments = (mean(xs), sd(xs));
  complex_matrix[N, N] zz = zm .* zm;
  real first = pair.1;
}
