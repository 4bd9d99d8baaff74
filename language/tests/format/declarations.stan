data{int<lower=0>N;real a,b;vector<lower=0,upper=1>[N]p;array[N,2]int<lower=0> k;matrix[N,N]m;}
parameters{simplex[N]theta;cholesky_factor_corr[N]L;real<offset=a,multiplier=b>z;tuple(real,array[2]int) t;}
model{theta~dirichlet(rep_vector(1,N));}
