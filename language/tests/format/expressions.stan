functions {
  real f(data real x,array[,]real y,tuple(int,real)t){return -x^2+y[1,2]*t.2;}
  real g(real x);
  void h(vector v){print(v',v[2:],v[:3],v[1:size(v)-1],{1,2},[1,2],(1,2.5),(1.0,));}
}
parameters { real mu; }
model {
  target+=normal_lupdf(mu|0,1)+(mu>0?1:-1)*1e-3;
  mu~normal(0,1)T[-1,];
  target += -(mu - 1) .* mu ./ 2 %/% 1 + 2i;
}
