//! Host-side sparse formats: validation, statistics and conversions from CSR.

pub(crate) mod csr;
