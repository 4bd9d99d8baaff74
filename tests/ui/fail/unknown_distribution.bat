// expect: semantic error
parameters {
  real mu;
}
model {
  mu ~ nromal(0, 1);
}
