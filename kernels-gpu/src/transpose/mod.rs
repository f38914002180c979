//! The transposed product `y = alpha * Aᵀ * x + beta * y` of a CSR matrix, two ways: a kernel that
//! scatters each row's products into `y` with atomic adds ([`atomic`]), and the construction of
//! `Aᵀ` in CSR on the device ([`build`]), after which the ordinary CSR kernels compute the product.

mod atomic;
mod build;
