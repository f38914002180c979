//! The PTX entries the host launches, looked up once when the module loads, by the names of
//! `kernels_gpu::abi`'s constants (the kernels export exactly those; a test below checks the PTX).

use crate::scalar::{Precision, Scalar};
use crate::{Error, Result};
use cudarc::driver::sys::CUfunction_attribute;
use cudarc::driver::{CudaFunction, CudaModule};
use kernels_gpu::abi::{self, Entry, STREAM_BLOCK_SIZE, STREAM_STAGES, StreamStage};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// The streaming engine's entry of one element type, from the sm_90 module, with the launch facts
/// the driver knows: it takes more than the 48 KiB of shared memory a block gets without opting in.
#[derive(Debug, Clone)]
pub(crate) struct StreamKernel {
    pub csr: CudaFunction,
    /// Blocks of `csr` an SM holds at once (shared memory and registers allow), at least 1, for each
    /// ring depth of `abi::STREAM_STAGES`, in its order.
    pub blocks_per_sm: [u32; STREAM_STAGES.len()],
}

/// The streaming engine's entries of the sm_90 module (`kernels-gpu/src/stream/`), both element
/// types.
#[derive(Debug, Clone)]
pub(crate) struct StreamKernels {
    f32: StreamKernel,
    f64: StreamKernel,
}

impl StreamKernels {
    /// Looks the entries up and opts each into its deepest ring's shared memory.
    pub fn load(module: &Arc<CudaModule>) -> Result<Self> {
        let load = |name: &'static str, elem: u32| -> Result<StreamKernel> {
            let csr = module.load_function(name)?;
            let deepest = STREAM_STAGES.iter().copied().max().unwrap_or(1);
            // A ring is tens of KiB: it fits an i32.
            let bytes = i32::try_from(StreamStage::block_bytes(elem, deepest)).unwrap_or(i32::MAX);
            csr.set_attribute(CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes)?;
            let mut blocks_per_sm = [1; STREAM_STAGES.len()];
            for (blocks, &stages) in blocks_per_sm.iter_mut().zip(&STREAM_STAGES) {
                let bytes = StreamStage::block_bytes(elem, stages) as usize;
                *blocks = csr
                    .occupancy_max_active_blocks_per_multiprocessor(STREAM_BLOCK_SIZE, bytes, None)?
                    .max(1);
            }
            Ok(StreamKernel { csr, blocks_per_sm })
        };
        Ok(Self { f32: load(abi::CSR_STREAM.f32, 4)?, f64: load(abi::CSR_STREAM.f64, 8)? })
    }

    pub fn of<T: Scalar>(&self) -> &StreamKernel {
        match T::PRECISION {
            Precision::Single => &self.f32,
            Precision::Double => &self.f64,
        }
    }
}

/// Every entry of the sm_70 module (or, for those of [`abi::SM90_ENTRIES`] on Hopper and later, its
/// build in the sm_90 module), found by its name: each strategy looks up the entries it
/// launches by their `abi` constants, so that a kernel needs no field in a table every format edits.
/// All are looked up when the module loads, so a build whose PTX lacks one fails at
/// [`Gpu::new`](crate::Gpu::new) and not at a product. Where a plan prepared a launch it holds the
/// function; other launches (the solvers', the scaling) pay a lookup of tens of nanoseconds.
#[derive(Debug, Clone)]
pub(crate) struct Kernels {
    by_name: HashMap<&'static str, CudaFunction>,
    /// The names taken from the sm_90 module, whose builds wait for the grids ahead of them first.
    waiting: HashSet<&'static str>,
}

impl Kernels {
    /// Looks every name up in `module` (the sm_70 module), but those of [`abi::SM90_ENTRIES`] in
    /// `sm90` where the GPU loaded that module.
    pub fn load(module: &Arc<CudaModule>, sm90: Option<&Arc<CudaModule>>) -> Result<Self> {
        let waiting: HashSet<_> =
            if sm90.is_some() { both_types(abi::SM90_ENTRIES).collect() } else { HashSet::new() };
        let by_name = names()
            .map(|name| {
                let from = match sm90 {
                    Some(sm90) if waiting.contains(name) => sm90,
                    _ => module,
                };
                Ok((name, from.load_function(name)?))
            })
            .collect::<Result<_>>()?;
        Ok(Self { by_name, waiting })
    }

    /// Whether the function of `name` is an sm_90 build that waits for the grids ahead of it before
    /// anything else (`griddepcontrol.wait`), so that it may be launched before they end.
    pub fn waits_for_prerequisites(&self, name: &'static str) -> bool {
        self.waiting.contains(name)
    }

    /// The entry `name`; [`Error::Unsupported`] for a name outside [`abi::ENTRIES`] and
    /// [`abi::UNTYPED_ENTRIES`] (a constant the lists miss, which the test below would have caught
    /// had the kernels exported it).
    pub fn get(&self, name: &'static str) -> Result<&CudaFunction> {
        self.by_name
            .get(name)
            .ok_or(Error::Unsupported("a kernel outside abi::ENTRIES, which the module does not load"))
    }
}

/// Every name of the sm_70 module the host loads: [`abi::ENTRIES`] for both element types, and
/// [`abi::UNTYPED_ENTRIES`].
fn names() -> impl Iterator<Item = &'static str> {
    let typed = abi::ENTRIES.iter().flat_map(|family| both_types(family));
    typed.chain(abi::UNTYPED_ENTRIES.iter().copied())
}

/// The names of `entries`, both element types.
fn both_types(entries: &'static [Entry]) -> impl Iterator<Item = &'static str> {
    entries.iter().flat_map(|e| [e.f32, e.f64])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::gpu::{PTX, PTX_SM90};
    use std::collections::{BTreeMap, BTreeSet};

    /// Each entry's body in a committed PTX module (its header to the brace that closes it), by name.
    fn ptx_bodies(ptx: &'static str) -> BTreeMap<&'static str, &'static str> {
        let mut bodies = BTreeMap::new();
        let mut rest = ptx;
        while let Some(at) = rest.find(".visible .entry ") {
            let body = &rest[at..];
            let end = body.find("\n}\n").map_or(body.len(), |e| e + 3);
            let name = body[".visible .entry ".len()..].split(['(', ' ']).next().unwrap_or_default();
            bodies.insert(name, &body[..end]);
            rest = &body[end..];
        }
        bodies
    }

    /// The `.entry` names of a committed PTX module.
    fn ptx_entries(ptx: &'static str) -> BTreeSet<&'static str> {
        ptx_bodies(ptx).into_keys().collect()
    }

    /// A name the host looks up that the kernels do not export would fail only at `Gpu::new`, and a
    /// kernel the lists miss could not be launched: both are caught here, without a GPU.
    #[test]
    fn the_lists_name_every_ptx_entry_and_nothing_else() {
        let host: BTreeSet<_> = names().collect();
        let ptx = ptx_entries(PTX);
        assert!(ptx.len() > 40, "no entries parsed from the PTX: {ptx:?}");
        let missing: Vec<_> = host.difference(&ptx).collect();
        let unused: Vec<_> = ptx.difference(&host).collect();
        assert!(missing.is_empty(), "listed but not in the PTX: {missing:?}");
        assert!(
            unused.is_empty(),
            "in the PTX but in neither abi::ENTRIES nor abi::UNTYPED_ENTRIES: {unused:?}"
        );
    }

    /// The register budget (`.maxnreg`) in each entry's header of the committed sm_70 module, by
    /// entry: what `cargo xtask ptx` wrote from [`abi::REGISTER_BUDGETS`].
    fn ptx_budgets(ptx: &'static str) -> BTreeMap<&'static str, u32> {
        let header = |body: &'static str| body.lines().take_while(|&line| line != "{");
        ptx_bodies(ptx)
            .into_iter()
            .filter_map(|(name, body)| {
                let n = header(body).find_map(|line| line.strip_prefix(".maxnreg "))?;
                Some((name, n.trim().parse().expect("a register count")))
            })
            .collect()
    }

    /// The committed PTX holds exactly the budgets `abi::REGISTER_BUDGETS` gives (checked here
    /// without the kernels' nightly, which `cargo xtask ptx --check` needs).
    #[test]
    fn the_ptx_states_exactly_the_register_budgets() {
        let listed: BTreeMap<_, _> = abi::REGISTER_BUDGETS.iter().copied().collect();
        assert_eq!(listed.len(), abi::REGISTER_BUDGETS.len(), "an entry budgeted twice");
        assert_eq!(ptx_budgets(PTX), listed);
        assert!(ptx_budgets(PTX_SM90).is_empty());
    }

    /// Every width of the column-panel kernel has its budget, in both element types: the table
    /// lists them one by one, so a width added to `abi::CSR_PANELS` must be added there too.
    #[test]
    fn every_column_panel_width_is_budgeted() {
        let listed: BTreeMap<_, _> = abi::REGISTER_BUDGETS.iter().copied().collect();
        for entry in abi::CSR_PANELS {
            assert!(listed.contains_key(entry.f32), "{}", entry.f32);
            assert!(listed.contains_key(entry.f64), "{}", entry.f64);
        }
    }

    /// The matrix's loads leave L1 first where a group of lanes reads whole lines a step, and only
    /// there (`abi::EVICT_FIRST_MIN_LANES`): the hint cost a thread per row up to 2.24x its time
    /// (docs/PERF.md, section 35), so it must not drift onto the narrow kernels.
    #[test]
    fn the_matrix_leaves_l1_first_only_under_wide_groups() {
        let bodies = ptx_bodies(PTX);
        let hinted = |name: &str| bodies.get(name).expect(name).contains("L1::evict_first");
        let families = [
            (&abi::CSR_VECTOR_COOPS[..], &abi::CSR_VECTOR[..]),
            (&abi::CSR_ALIGNED_GROUPS[..], &abi::CSR_ALIGNED_NC[..]),
            (&abi::CSR_ALIGNED_GROUPS[..], &abi::CSR_ALIGNED_PLAIN[..]),
        ];
        for (lanes, entries) in families {
            for (&lanes, entry) in lanes.iter().zip(entries) {
                for name in [entry.f32, entry.f64] {
                    assert_eq!(hinted(name), lanes >= abi::EVICT_FIRST_MIN_LANES, "{name}");
                }
            }
        }
        for name in [abi::CSR_SCALAR.f32, abi::CSR_SCALAR.f64] {
            assert!(!hinted(name), "{name}");
        }
        // The compressed-index kernel: from half a line of its 2-byte offsets a step, every stream.
        for family in [abi::COMPRESSED, abi::COMPRESSED_F32, abi::COMPRESSED_F16, abi::COMPRESSED_BF16] {
            for (&coop, entry) in abi::COMPRESSED_COOPS.iter().zip(family) {
                for name in [entry.f32, entry.f64] {
                    assert_eq!(hinted(name), coop >= abi::COMPRESSED_EVICT_FIRST_MIN_LANES, "{name}");
                }
            }
        }
        // A warp's 32 consecutive entries a step; the balanced kernel in both modules.
        for entry in [abi::CSR_BALANCED, abi::CSR_MERGE] {
            assert!(hinted(entry.f32) && hinted(entry.f64), "{}", entry.f32);
        }
        // The sm_90 builds, which Hopper runs, hint as the sm_70 module's do.
        let sm90 = ptx_bodies(PTX_SM90);
        for name in both_types(abi::SM90_ENTRIES) {
            assert_eq!(sm90[name].contains("L1::evict_first"), hinted(name), "{name}");
        }
    }

    /// The sm_90 module exports the streaming engine's entries and those of `abi::SM90_ENTRIES`, and
    /// nothing else; each of the latter is an entry of the sm_70 module too (the host falls back to
    /// it before Hopper).
    #[test]
    fn the_sm90_module_exports_the_stream_entries_and_the_newer_builds() {
        let newer: BTreeSet<_> = both_types(abi::SM90_ENTRIES).collect();
        let mut expected = newer.clone();
        expected.extend([abi::CSR_STREAM.f32, abi::CSR_STREAM.f64]);
        assert_eq!(ptx_entries(PTX_SM90), expected);
        let all: BTreeSet<_> = names().collect();
        assert!(newer.is_subset(&all), "{:?}", newer.difference(&all).collect::<Vec<_>>());
    }

    /// The sm_90 build of the balanced kernel is the reason it is exported twice: each step's OR of
    /// the segment heads is one `redux.sync` there and a butterfly of shuffles in the sm_70 module
    /// (`warp_scan::warp_or`).
    #[test]
    fn the_sm90_balanced_kernel_ors_the_heads_in_one_instruction() {
        let (sm70, sm90) = (ptx_bodies(PTX), ptx_bodies(PTX_SM90));
        let butterflies = |body: &str| body.matches("shfl.sync.bfly.b32").count();
        for name in [abi::CSR_BALANCED.f32, abi::CSR_BALANCED.f64] {
            assert!(sm90[name].contains("redux.sync.or.b32"), "{name}");
            assert!(!sm70[name].contains("redux.sync"), "{name}");
            // The sums' butterflies (one-row tasks, tasks of a few rows, chunks) are in both.
            assert!(butterflies(sm70[name]) > butterflies(sm90[name]), "{name}");
        }
    }

    /// Every entry of both modules waits for its prerequisite grids first in its sm_90 build (and
    /// nowhere in the sm_70 module), which is what makes launching it programmatically safe
    /// (`Prepared::of_entry`): no access of the kernel's but its parameters' comes before the wait.
    #[test]
    fn the_sm90_builds_wait_for_the_grids_ahead_first() {
        let (sm70, sm90) = (ptx_bodies(PTX), ptx_bodies(PTX_SM90));
        for name in both_types(abi::SM90_ENTRIES) {
            let body = sm90[name];
            let wait = body.find("griddepcontrol.wait;").unwrap_or_else(|| panic!("{name}: no wait"));
            assert_eq!(body.matches("griddepcontrol.wait;").count(), 1, "{name}");
            // Only the launch's own parameters may be read before it, in the entry's first block.
            let before = body[..wait].replace("ld.param.", "");
            for access in ["ld.", "st.", "atom.", "red.", "cp.", "bra", "$L__"] {
                assert!(!before.contains(access), "{name}: {access} before the wait");
            }
        }
        assert!(sm70.values().all(|body| !body.contains("griddepcontrol")));
        // Every width of the vector kernel is among them: Auto's choice of width does not change how
        // a product is launched.
        for entry in abi::CSR_VECTOR {
            assert!(abi::SM90_ENTRIES.contains(&entry), "{}", entry.f32);
        }
    }

    /// `cargo xtask ptx` writes register budgets into the sm_70 module only: an entry of both
    /// modules with a budget would lose it on Hopper.
    #[test]
    fn no_entry_of_both_modules_has_a_register_budget() {
        let budgeted: BTreeSet<_> = abi::REGISTER_BUDGETS.iter().map(|&(name, _)| name).collect();
        for name in both_types(abi::SM90_ENTRIES) {
            assert!(!budgeted.contains(name), "{name}");
        }
    }
}
