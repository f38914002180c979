//! Tier 6, several GPUs: a CSR matrix split by rows over the GPUs of one or several processes
//! ([`DistributedCsr`], the split of `formats::Split`), and its product ([`DistributedPlan`]),
//! whose exchange of `x`'s ghost entries ([`Exchange`]: over NCCL, or read in place by peer access)
//! runs beside the local block's product, called by call or replayed from one graph over the GPUs
//! ([`DistributedGraph`]). The GPUs and their communicators are a [`Ranks`]: one process for all GPUs of a host
//! ([`Ranks::all_local`]) or one process per GPU ([`Ranks::one_of`] with a [`UniqueId`] handed over
//! by the launcher), on the same code. [`DistributedPcg`], [`DistributedPipelinedCg`],
//! [`DistributedBicgstab`] and [`DistributedGmres`] are the solver tier's solvers run over the GPUs
//! of a distributed plan, their sums all-reduced over the GPUs.

mod graph;
mod matrix;
mod product;
mod space;

pub use crate::device::{Member, Ranks, UniqueId};
pub use crate::formats::{Block, Part, RowPartition, Split};
pub use graph::DistributedGraph;
pub use matrix::DistributedCsr;
pub use product::{BlockPlan, DistributedPlan, Exchange};
pub use space::{DistributedBicgstab, DistributedGmres, DistributedPcg, DistributedPipelinedCg};
