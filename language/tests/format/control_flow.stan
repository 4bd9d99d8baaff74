data { int N; array[N] real y; }
transformed data {
  real s = 0;
  for (n in 1:N) s += y[n];
  for (n in 2:N-1) { s += y[n]; }
  for (v in y) s += v;
  while (s>1) s/=2;
  if (s<0) { s = 0; } else if (s > 10) s = 10; else { s = s*1; }
  if (N==0) if (s==0) reject("empty: ", N); else print("odd");
  profile("tail") { s = s^2; }
  { real t; t = s; }
}
