//! Tier 1, host formats: the checked CSR view and its row statistics, the storage formats converted
//! from it on the CPU (ELL, SELL, COO, HYB, BRC, dense blocks, compressed column indices, compressed ELL, DIA), and the
//! local matrix approach (element matrices and their nodes), each with its validation and its model
//! constants; and the host's share of a staged upload (`staging.rs`: the chunks and the pass that
//! fills them). Pure data: nothing here touches a GPU. Upload a format with the `Gpu`'s `upload_*`
//! methods.

pub(crate) mod brc;
pub(crate) mod compressed;
pub(crate) mod compressed_ell;
pub(crate) mod convert;
pub(crate) mod coo;
pub(crate) mod csr;
pub(crate) mod dense_blocks;
pub(crate) mod dia;
pub(crate) mod ell;
pub(crate) mod hyb;
pub(crate) mod index_check;
#[cfg(any(feature = "sprs", feature = "faer"))]
pub(crate) mod interop;
pub(crate) mod limits;
pub(crate) mod lma;
pub(crate) mod partition;
pub(crate) mod reorder;
pub(crate) mod sell;
mod shape;
mod staging;

pub use brc::{Brc, brc_b2_candidates, brc_model_b2};
pub use compressed::{CompressedCsr, SEGMENT_ROWS, Storage, ValueStorage};
pub use compressed_ell::CompressedEll;
pub use coo::Coo;
pub use csr::{CsrRef, RowStats, first_decrease};
pub use dense_blocks::{
    DENSE_MAX_WINDOW_BYTES, DENSE_MIN_CAPTURE, DENSE_WINDOW, DENSE_WINDOW_ALIGN, DenseBlocks,
};
pub use dia::{DIA_MAX_DIAGONALS, Dia};
pub use ell::{ELL_MAX_PADDING_RATIO, Ell};
/// The 16-bit storage types of [`CompressedCsr`], [`CompressedEll`] and [`Dia`] values (from the
/// `half` crate).
pub use half::{bf16, f16};
pub use hyb::{HYB_BREAKEVEN_ROWS, HYB_ELL_SPEEDUP, Hyb, hyb_ell_width};
pub use index_check::{CsrIndex, IndexFaults};
#[cfg(any(feature = "sprs", feature = "faer"))]
pub use interop::Csr;
pub use limits::{MAX_PARTS, MAX_ROWS_PER_ENTRY, MAX_ROWS_WITHOUT_ENTRIES};
pub use lma::{Lma, LmaStorage, NO_NODE};
pub use partition::{Block, Part, RowPartition, Split};
pub use reorder::{Permutation, PermutedCsr, bandwidth};
pub use sell::{SELL_PADDING_FLOOR_BYTES, Sell};
pub use shape::Shape;
pub(crate) use shape::shape_accessors;
pub use staging::{STAGE_BYTES, STAGES, copy_checked, offsets_copy, offsets_stats, stage_chunks};
