//! [`Ranks`]: the GPUs one process drives in a distributed product, each with the NCCL communicator
//! that links it to the others (NCCL, *User Guide*, "Creating a communicator").
//!
//! Two ways to make one, on the same code above them: one process for all GPUs of a host
//! ([`Ranks::all_local`], `ncclCommInitAll`), and one process per GPU ([`Ranks::one_of`],
//! `ncclCommInitRank` from a [`UniqueId`] that a launcher hands to every process), the shape that
//! extends to several hosts. Each GPU has a second stream for NCCL, so that the exchange of one
//! product runs beside the local part of its product on the `Gpu`'s own stream.

use super::Gpu;
use crate::{Error, Result};
use cudarc::driver::CudaStream;
use cudarc::nccl::{Comm, Id};
use std::sync::Arc;

/// A GPU of a distributed product: its [`Gpu`], its rank among all ranks, and its communicator,
/// whose operations are enqueued on a stream of their own.
#[derive(Debug)]
pub struct Member {
    gpu: Gpu,
    comm: Comm,
}

impl Member {
    /// The GPU.
    pub fn gpu(&self) -> &Gpu {
        &self.gpu
    }

    /// This GPU's rank, `0..Ranks::size()`.
    pub fn rank(&self) -> usize {
        self.comm.rank()
    }

    /// The communicator; its operations run on [`Member::comm_stream`].
    pub(crate) fn comm(&self) -> &Comm {
        &self.comm
    }

    /// The stream NCCL's operations run on.
    pub(crate) fn comm_stream(&self) -> Arc<CudaStream> {
        self.comm.stream()
    }
}

/// The GPUs this process drives ([`Ranks::members`], in increasing rank), out of [`Ranks::size`]
/// ranks in all. Not `Send`: NCCL's communicators are used from the thread that made them.
#[derive(Debug)]
pub struct Ranks {
    members: Vec<Member>,
    size: usize,
}

/// The 128 bytes that name one NCCL clique: made by one process ([`UniqueId::new`]) and handed to
/// all the others, which then join it with [`Ranks::one_of`].
#[derive(Debug, Clone, Copy)]
pub struct UniqueId(Id);

/// NCCL's library must be loadable before any of its functions is called: cudarc's dynamic loading
/// panics on a missing library, where this crate answers with an error.
fn nccl_present() -> Result<()> {
    // SAFETY: only tries to open the library by its usual names; nothing is called in it.
    if unsafe { cudarc::nccl::sys::is_culib_present() } {
        Ok(())
    } else {
        Err(Error::Nccl { op: "loading", message: "libnccl was not found on the library path".into() })
    }
}

impl UniqueId {
    /// A fresh id (`ncclGetUniqueId`), made by one process for all.
    pub fn new() -> Result<Self> {
        nccl_present()?;
        Ok(Self(Id::new().map_err(Error::nccl("ncclGetUniqueId"))?))
    }

    /// The id's bytes, to hand to the other processes (a file, an environment variable in hex, MPI).
    pub fn to_bytes(&self) -> [u8; 128] {
        self.0.internal().map(|c| c as u8)
    }

    /// The id from [`UniqueId::to_bytes`]. Refused: another length than 128 bytes.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let bytes: [u8; 128] = bytes.try_into().map_err(|_| Error::DimensionMismatch {
            what: "an NCCL unique id",
            expected: 128,
            got: bytes.len(),
        })?;
        Ok(Self(Id::uninit(bytes.map(|b| b as core::ffi::c_char))))
    }
}

impl Ranks {
    /// One process driving GPUs `0..gpus`, rank `i` on GPU `i`. Refused: no GPU asked for, fewer
    /// GPUs than asked ([`Error::NoDevice`]), NCCL missing or failing ([`Error::Nccl`]).
    pub fn all_local(gpus: usize) -> Result<Self> {
        if gpus == 0 {
            return Err(Error::NoDevice(
                "a distributed product needs at least one GPU; 0 were asked for".into(),
            ));
        }
        let gpus = (0..gpus).map(Gpu::with_ordinal).collect::<Result<Vec<_>>>()?;
        nccl_present()?;
        let streams = gpus.iter().map(comm_stream).collect::<Result<Vec<_>>>()?;
        let comms = Comm::from_devices(streams).map_err(Error::nccl("ncclCommInitAll"))?;
        let size = gpus.len();
        Ok(Self {
            members: gpus.into_iter().zip(comms).map(|(gpu, comm)| Member { gpu, comm }).collect(),
            size,
        })
    }

    /// This process as rank `rank` of `size`, on GPU `ordinal`, joining the clique `id` names. Every
    /// rank must call it (`ncclCommInitRank` waits for all of them). Refused: `rank >= size`.
    pub fn one_of(ordinal: usize, rank: usize, size: usize, id: &UniqueId) -> Result<Self> {
        if rank >= size {
            let e = crate::FormatError::InvalidParameter {
                what: "the rank",
                value: rank,
                expected: "below the rank count",
            };
            return Err(e.into());
        }
        let gpu = Gpu::with_ordinal(ordinal)?;
        nccl_present()?;
        let stream = comm_stream(&gpu)?;
        let comm = Comm::from_rank(stream, rank, size, id.0).map_err(Error::nccl("ncclCommInitRank"))?;
        Ok(Self { members: vec![Member { gpu, comm }], size })
    }

    /// The GPUs this process drives, in increasing rank.
    pub fn members(&self) -> &[Member] {
        &self.members
    }

    /// The number of ranks in all processes.
    pub fn size(&self) -> usize {
        self.size
    }
}

/// The stream of a GPU's communicator, at the highest priority the device offers: NCCL's kernels
/// then take their SMs before the blocks of the local product enqueued beside them (both wait for
/// the pack), so the exchange runs under the product instead of after it.
fn comm_stream(gpu: &Gpu) -> Result<Arc<CudaStream>> {
    // The range is the current context's.
    gpu.context().bind_to_thread()?;
    let (_, greatest) = cudarc::driver::result::stream::get_priority_range()?;
    Ok(gpu.context().new_stream_with_priority(greatest)?)
}
