//! [`DistributedCsr`]: the parts of a [`Split`] that this process's GPUs hold, uploaded: each part's
//! local and remote blocks as [`DeviceCsr`]s, and its send lists as one index list for the pack.

use crate::device::{DeviceCsr, DeviceGather, DeviceScatter, Ranks};
use crate::formats::convert::narrow;
use crate::formats::{CsrRef, RowPartition, Split};
use crate::scalar::Scalar;
use crate::{Error, Result};
use std::ops::Range;

/// A matrix split by rows over the ranks of a [`Ranks`] (`formats::Split`: rows balanced by
/// non-zeros, local and remote blocks, the ghost map), with the parts of this process's GPUs on
/// them. Every process computes the whole split (an O(nnz) pass) and uploads its own parts.
#[derive(Debug)]
pub struct DistributedCsr<T> {
    nrows: usize,
    ncols: usize,
    pub(super) parts: Vec<DevicePart<T>>,
}

/// `rank` as NCCL's `int`: every rank is below the communicator's size, which NCCL keeps in one.
fn nccl_rank(rank: usize) -> Result<i32> {
    i32::try_from(rank).map_err(|_| Error::TooLarge { what: "a rank", value: rank, limit: i32::MAX as usize })
}

/// One rank's part on its GPU.
#[derive(Debug)]
pub(super) struct DevicePart<T> {
    pub rank: usize,
    pub rows: Range<usize>,
    pub cols: Range<usize>,
    pub local: DeviceCsr<T>,
    /// Only the rows with remote entries; `unpack` says which rows of the part they are.
    pub remote: DeviceCsr<T>,
    pub unpack: DeviceScatter,
    /// Every send list, peer after peer: the pack writes the send buffer in this order.
    pub pack: DeviceGather,
    /// `(peer, range of the send buffer)`, in increasing order of peer (NCCL's `int` ranks).
    pub sends: Vec<(i32, Range<usize>)>,
    /// `(owner, range of the ghost vector)`, in increasing order of owner.
    pub receives: Vec<(i32, Range<usize>)>,
}

impl<T: Scalar> DistributedCsr<T> {
    /// `a` split over `ranks.size()` ranks by [`RowPartition::balanced`], this process's parts
    /// uploaded to its GPUs. Refused as [`Split::new`] and the uploads refuse.
    pub fn upload(ranks: &Ranks, a: CsrRef<'_, T>) -> Result<Self> {
        let split = Split::new(&a, RowPartition::balanced(&a, ranks.size())?)?;
        let mut parts = Vec::with_capacity(ranks.members().len());
        for member in ranks.members() {
            let (gpu, rank) = (member.gpu(), member.rank());
            let part = &split.parts[rank];
            let mut indices = Vec::new();
            let mut sends = Vec::with_capacity(part.sends.len());
            for (peer, list) in &part.sends {
                sends.push((nccl_rank(*peer)?, indices.len()..indices.len() + list.len()));
                indices.extend_from_slice(list);
            }
            let remote_rows =
                part.remote_rows.iter().map(|&r| narrow("a part's row", r)).collect::<Result<Vec<_>>>()?;
            let receives = part.receives.iter().map(|(owner, run)| Ok((nccl_rank(*owner)?, run.clone())));
            parts.push(DevicePart {
                rank,
                rows: part.rows.clone(),
                cols: part.cols.clone(),
                local: gpu.upload_csr_ref(part.local.view()?)?,
                remote: gpu.upload_csr_ref(part.remote.view()?)?,
                pack: gpu.upload_gather("a send list", &indices, part.cols.len())?,
                unpack: gpu.upload_scatter("the remote rows", &remote_rows, part.rows.len())?,
                sends,
                receives: receives.collect::<Result<_>>()?,
            });
        }
        Ok(Self { nrows: split.nrows, ncols: split.ncols, parts })
    }

    /// Rows of the whole matrix.
    pub fn nrows(&self) -> usize {
        self.nrows
    }

    /// Columns of the whole matrix.
    pub fn ncols(&self) -> usize {
        self.ncols
    }

    /// The global rows of `y` that this process's `i`-th member computes (its `y` has that length).
    pub fn rows(&self, i: usize) -> Range<usize> {
        self.parts[i].rows.clone()
    }

    /// The global columns of `x` that this process's `i`-th member owns (its `x` has that length).
    pub fn cols(&self, i: usize) -> Range<usize> {
        self.parts[i].cols.clone()
    }

    /// Entries of `x` this process's `i`-th member receives per product (its ghost vector's length).
    pub fn ghosts(&self, i: usize) -> usize {
        self.parts[i].receives.last().map_or(0, |(_, run)| run.end)
    }

    /// Entries of `x` this process's `i`-th member sends per product.
    pub fn sent(&self, i: usize) -> usize {
        self.parts[i].pack.len as usize
    }

    /// Entries of the local block and the remote block of this process's `i`-th member.
    pub fn entries(&self, i: usize) -> (usize, usize) {
        (self.parts[i].local.nnz(), self.parts[i].remote.nnz())
    }

    /// The members' parts exist for exactly the members of `ranks`, on their GPUs.
    pub(super) fn check_ranks(&self, ranks: &Ranks) -> Result<()> {
        let same = ranks.members().len() == self.parts.len()
            && ranks.members().iter().zip(&self.parts).all(|(m, p)| m.rank() == p.rank);
        if same { Ok(()) } else { Err(Error::ForeignBuffer("the distributed matrix (made for other ranks)")) }
    }
}
