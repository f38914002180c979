//! Host-side sparse formats: validation, statistics and conversions from CSR.

pub(crate) mod brc;
pub(crate) mod convert;
pub(crate) mod coo;
pub(crate) mod csr;
pub(crate) mod dense_blocks;
pub(crate) mod ell;
pub(crate) mod hyb;
pub mod lma;
