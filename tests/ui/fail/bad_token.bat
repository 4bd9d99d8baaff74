// expect: syntax error
transformed data {
  real x = 3 # 4;
}
