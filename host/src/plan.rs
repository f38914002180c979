//! Kernel choice: the [`Kernel`] enum and the rule behind [`Kernel::Auto`].

use crate::format::csr::RowStats;
use crate::{Error, Result};
use kernels_gpu::abi::{CSR_VECTOR_COOPS, WARP_SIZE};

/// Which kernel computes a product, with its launch parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Kernel {
    /// Chosen from the matrix's row statistics by [`Kernel::auto`], in constant time.
    Auto,
    /// One thread per row (`kernels-gpu/src/csr/scalar.rs`).
    CsrScalar { block_size: u32 },
    /// `coop` threads per row, `coop` in 2, 4, 8, 16, 32 (`kernels-gpu/src/csr/vector.rs`).
    CsrVector { coop: u32, block_size: u32 },
}

/// Threads per block of [`Kernel::Auto`]'s choices: Reguly & Giles (2012) found 128 best across their
/// suite, and it leaves the scheduler many blocks per SM.
pub const AUTO_BLOCK_SIZE: u32 = 128;

impl Kernel {
    /// The kernel [`Kernel::Auto`] stands for: `coop` threads per row, `coop` the smallest power of two
    /// at least `sqrt(mean row length)`, at most 32 (Reguly & Giles, 2012: enough lanes to coalesce the
    /// row's loads, few enough that short rows keep most lanes busy); one thread per row when that is 1.
    pub fn auto(stats: &RowStats) -> Kernel {
        let root = stats.mean.sqrt();
        if root <= 1.0 {
            return Kernel::CsrScalar { block_size: AUTO_BLOCK_SIZE };
        }
        let coop = CSR_VECTOR_COOPS.iter().copied().find(|&c| f64::from(c) >= root).unwrap_or(WARP_SIZE);
        Kernel::CsrVector { coop, block_size: AUTO_BLOCK_SIZE }
    }

    /// `self`, with [`Kernel::Auto`] resolved for a matrix of these statistics, after checking the
    /// parameters.
    pub(crate) fn resolve(self, stats: &RowStats) -> Result<Kernel> {
        match self {
            Kernel::Auto => Ok(Kernel::auto(stats)),
            Kernel::CsrScalar { block_size } => {
                check_block_size(block_size)?;
                Ok(self)
            }
            Kernel::CsrVector { coop, block_size } => {
                check_block_size(block_size)?;
                if !CSR_VECTOR_COOPS.contains(&coop) {
                    return Err(Error::InvalidKernel(format!(
                        "coop {coop}: the cooperative kernel exists for {CSR_VECTOR_COOPS:?} threads per row"
                    )));
                }
                Ok(self)
            }
        }
    }
}

/// Blocks of whole warps, at most 1024 threads (the CUDA limit).
fn check_block_size(block_size: u32) -> Result<()> {
    if block_size == 0 || block_size > 1024 || !block_size.is_multiple_of(WARP_SIZE) {
        return Err(Error::InvalidKernel(format!(
            "block size {block_size}: it must be a multiple of {WARP_SIZE} between {WARP_SIZE} and 1024"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats_with_mean(mean: f64) -> RowStats {
        RowStats { rows: 1000, cols: 1000, nnz: 0, mean, std_dev: 0.0, max: 0, empty_rows: 0 }
    }

    #[test]
    fn auto_follows_the_square_root_rule() {
        let coop = |mean| match Kernel::auto(&stats_with_mean(mean)) {
            Kernel::CsrScalar { .. } => 1,
            Kernel::CsrVector { coop, .. } => coop,
            Kernel::Auto => unreachable!(),
        };
        assert_eq!(coop(0.0), 1);
        assert_eq!(coop(1.0), 1);
        assert_eq!(coop(3.0), 2);
        assert_eq!(coop(7.0), 4);
        assert_eq!(coop(16.0), 4);
        assert_eq!(coop(64.0), 8);
        assert_eq!(coop(300.0), 32);
        assert_eq!(coop(1e6), 32);
    }

    #[test]
    fn bad_parameters_are_refused() {
        let s = stats_with_mean(4.0);
        assert!(Kernel::CsrScalar { block_size: 100 }.resolve(&s).is_err());
        assert!(Kernel::CsrScalar { block_size: 2048 }.resolve(&s).is_err());
        assert!(Kernel::CsrVector { coop: 3, block_size: 128 }.resolve(&s).is_err());
        assert!(Kernel::CsrVector { coop: 64, block_size: 128 }.resolve(&s).is_err());
        assert!(Kernel::CsrVector { coop: 8, block_size: 256 }.resolve(&s).is_ok());
    }
}
