//! The built-in signature table: every Stan math library function and
//! distribution with its signatures, shared by the checker, hover,
//! completion, the model IR and the backends.
