//! The crate's errors: every way an input can be refused, named with the row or index at fault.

use cudarc::driver::DriverError;

/// Results of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// An error of this crate. Nothing is launched, and no output is written, once one is returned by a
/// check (every variant but [`Error::Driver`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The CSR arrays do not describe a matrix.
    #[error("invalid CSR matrix: {0}")]
    InvalidCsr(#[from] CsrError),
    /// A vector does not have the length the matrix requires.
    #[error("{what} has length {got}, but the matrix needs {expected}")]
    DimensionMismatch { what: &'static str, expected: usize, got: usize },
    /// A conversion from CSR to another storage format was refused.
    #[error("cannot convert the matrix: {0}")]
    Format(#[from] FormatError),
    /// A size exceeds the 32-bit indices the kernels use.
    #[error("{what} is {value}, over the limit of {limit} of the kernels' 32-bit indices")]
    TooLarge { what: &'static str, value: usize, limit: usize },
    /// A kernel was asked for with parameters it does not support.
    #[error("unsupported kernel parameters: {0}")]
    InvalidKernel(String),
    /// `X` and `Y` of a product with several vectors are not both in the layout it was planned for.
    #[error("X and Y must both be in the layout the product was planned for ({0})")]
    LayoutMismatch(&'static str),
    /// An operation cannot run as asked; the message says why (a CPU kernel's parameter, a solve
    /// that was not started, an upload while the stream captures a graph).
    #[error("{0}")]
    Unsupported(&'static str),
    /// A kernel (the chunked CPU kernel, the column-panel GPU kernel) needs the column indices of
    /// every row in non-decreasing order; those of `row` (the first such row) decrease.
    #[error(
        "{kernel} needs the column indices of every row in non-decreasing order; those of row {row} do not"
    )]
    UnsortedRow { kernel: &'static str, row: usize },
    /// A device buffer was made by another [`crate::Gpu`] (another CUDA context).
    #[error("{0} belongs to another Gpu")]
    ForeignBuffer(&'static str),
    /// No usable GPU: the CUDA driver library is missing, or it reports no device. The message
    /// names the cause and what to install or set (the driver, `LD_LIBRARY_PATH`,
    /// `CUDA_VISIBLE_DEVICES`).
    #[error("no CUDA GPU available: {0}")]
    NoDevice(String),
    /// The device has no room for a buffer of `bytes` bytes. Nothing was allocated, and the `Gpu`
    /// and everything on it stay usable: free something, or use a smaller matrix.
    #[error("the GPU has no room for {bytes} more bytes")]
    DeviceMemory { bytes: usize },
    /// NCCL, the library that moves data between GPUs, is missing or reported an error during `op`.
    #[error("NCCL {op}: {message}")]
    Nccl { op: &'static str, message: String },
    /// Entry `entry` of the index list `what` is `index`, past the `len` elements it indexes.
    #[error("{what}: entry {entry} is {index}, out of range for {len} elements")]
    IndexOutOfRange { what: &'static str, entry: usize, index: usize, len: usize },
    /// `what` was derived from a matrix's values, which have been replaced since
    /// ([`DeviceCsr::update_values`](crate::DeviceCsr::update_values)); `refresh` says how to derive
    /// it anew. Nothing was enqueued.
    #[error("{what} was derived from the matrix's values before their last update: {refresh}")]
    StaleValues { what: &'static str, refresh: &'static str },
    /// The CUDA driver reported an error.
    #[error("CUDA driver: {0}")]
    Driver(#[from] DriverError),
    /// A file or reader could not be read (`path` is `None` for a reader).
    #[error("cannot read {}: {source}", .path.as_ref().map_or("the input".into(), |p| p.display().to_string()))]
    Io { path: Option<std::path::PathBuf>, source: std::io::Error },
    /// A solver refused its input, or broke down on it.
    #[error("iterative solver: {0}")]
    Solve(#[from] SolveError),
    /// A real-valued parameter, `what`, is outside its range (`expected` says the range): a model
    /// problem's Péclet number that is negative or not finite.
    #[error("{what} is {value}, but it must be {expected}")]
    InvalidNumber { what: &'static str, value: f64, expected: &'static str },
    /// A Matrix Market input is malformed, or of a kind the reader does not take. `path` is the file's
    /// (`None` for a reader or text); `line` counts from 1 (`None` for a fault of summed entries, which
    /// the message places by row and column).
    #[error(
        "Matrix Market{}{}: {message}",
        .path.as_ref().map(|p| format!(" file {}", p.display())).unwrap_or_default(),
        .line.map(|l| format!(", line {l}")).unwrap_or_default()
    )]
    MatrixMarket { path: Option<std::path::PathBuf>, line: Option<usize>, message: String },
}

impl Error {
    /// The [`Error::Nccl`] of a failed `op`.
    pub(crate) fn nccl(op: &'static str) -> impl FnOnce(cudarc::nccl::result::NcclError) -> Self {
        move |e| Self::Nccl { op, message: format!("{:?}", e.0) }
    }
}

/// Why CSR arrays were refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CsrError {
    #[error("row_offsets has {got} entries; {rows} rows need one more than that")]
    OffsetsLength { rows: usize, got: usize },
    #[error("row_offsets starts at {0}, not 0")]
    OffsetsStart(usize),
    #[error("row_offsets decreases at row {row}: {start} > {end}")]
    OffsetsDecrease { row: usize, start: usize, end: usize },
    #[error("row_offsets ends at {last}, but there are {nnz} entries")]
    OffsetsEnd { last: usize, nnz: usize },
    #[error("{col_indices} column indices but {values} values")]
    LengthMismatch { col_indices: usize, values: usize },
    #[error("column index {col} of entry {entry} (row {row}) is out of range for {ncols} columns")]
    ColumnOutOfRange { row: usize, entry: usize, col: usize, ncols: usize },
    /// An index of another crate's sparse matrix (`sprs`, `faer`) at `position` of its `what` array
    /// is negative or does not fit in `usize`.
    #[error("{what}[{position}] is negative or does not fit in usize")]
    IndexNotUsize { what: &'static str, position: usize },
}

/// Why a conversion from CSR to another storage format was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FormatError {
    /// ELL pads every row to `width` entries (the longest row's length for ELL, the ELL part's width
    /// for HYB); for this matrix that takes more memory than the limit (`ELL_MAX_PADDING_RATIO` times
    /// the bytes of its CSR form).
    #[error(
        "ELL would pad every row to {width} entries (the longest, row {longest_row}, has {longest_len}): \
         {ell_bytes} bytes, over the limit of {limit_bytes}"
    )]
    EllPadding { width: usize, longest_row: usize, longest_len: usize, ell_bytes: u128, limit_bytes: u128 },
    /// SELL pads each slice of 32 rows to its longest row (the widest, `slice`, to `width` entries);
    /// for this matrix that takes more memory than the limit (`ELL_MAX_PADDING_RATIO` times the bytes
    /// of its CSR form, or `SELL_PADDING_FLOOR_BYTES` where that is more).
    #[error(
        "SELL would take {sell_bytes} bytes, over the limit of {limit_bytes} (the widest slice, \
         {slice}, pads its rows to {width} entries)"
    )]
    SellPadding { slice: usize, width: usize, sell_bytes: u128, limit_bytes: u128 },
    /// The compressed ELL format stores a column as its offset from the row in 16 bits; entry
    /// `entry` (row `row`, column `col`) lies farther from its row than `limit`.
    #[error("entry {entry} (row {row}, column {col}) lies farther than {limit} columns from its row")]
    ColumnFarFromRow { row: usize, entry: usize, col: usize, limit: usize },
    /// DIA holds at most `limit` diagonals (one bit of a row's presence words each); entry `entry`
    /// (row `row`, column `col`) lies on one more.
    #[error("entry {entry} (row {row}, column {col}) lies on a diagonal past the first {limit}")]
    TooManyDiagonals { row: usize, entry: usize, col: usize, limit: usize },
    /// DIA stores one value per row and diagonal; entries `first` and `entry` of row `row` share
    /// column `col`.
    #[error("entries {first} and {entry} of row {row} share column {col}")]
    DuplicateEntry { row: usize, first: usize, entry: usize, col: usize },
    /// DIA stores every row's slot on each of its `diagonals` diagonals; for this matrix that takes
    /// more memory than the limit (`ELL_MAX_PADDING_RATIO` times the bytes of its CSR form).
    #[error(
        "DIA would store {diagonals} diagonals of every row: {dia_bytes} bytes, over the limit of {limit_bytes}"
    )]
    DiaPadding { diagonals: usize, dia_bytes: u128, limit_bytes: u128 },
    /// An element of a local-matrix (LMA) operator names a node past the node count.
    #[error("node {node} in slot {slot} of element {element} is out of range for {nodes} nodes")]
    LmaNodeOutOfRange { element: usize, slot: usize, node: usize, nodes: usize },
    /// Entry `entry` (in row `row`) is finite, but beyond the range of the storage type the caller
    /// asked for (`storage`: binary16 holds up to 65,504, f32 and bfloat16 up to about 3.4e38).
    #[error("entry {entry} (row {row}) is finite but beyond the range of {storage}")]
    ValueOutOfRange { row: usize, entry: usize, storage: &'static str },
    /// A parameter of the conversion is out of its range.
    #[error("{what} is {value}, but it must be {expected}")]
    InvalidParameter { what: &'static str, value: usize, expected: &'static str },
}

/// Why an iterative solver refused a system or stopped without a solution.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SolveError {
    /// The solvers need a square matrix.
    #[error("the matrix is {rows} x {cols}, not square")]
    NotSquare { rows: usize, cols: usize },
    /// The Jacobi preconditioner needs a positive diagonal, which every symmetric positive definite
    /// matrix has.
    #[error("diagonal entry {row} is {value}: not positive, so the matrix is not positive definite")]
    NonPositiveDiagonal { row: usize, value: f64 },
    /// The Jacobi preconditioner needs a diagonal entry that is non-zero and finite in every row,
    /// and whose inverse is finite in the solver's type (a subnormal entry's is not).
    #[error(
        "diagonal entry {row} is {value}: Jacobi needs a non-zero, finite diagonal with a finite inverse"
    )]
    SingularDiagonal { row: usize, value: f64 },
    /// A scalar of the recurrence, `what`, took a value that stops it at iteration `iteration`
    /// (counted from 0), for the reason `why`. CG's `pᵀAp` and `rᵀz` must be positive and finite (the
    /// matrix or the preconditioner is not symmetric positive definite, or holds NaN or infinities);
    /// BiCGSTAB's `r̂ᵀr`, `r̂ᵀv`, `tᵀt` and `ω` must be non-zero and finite; GMRES's `rᵀr` and `‖w‖²`
    /// finite, and the diagonal of its triangular factor, `H[j][j]`, non-zero.
    #[error("breakdown at iteration {iteration}: {what} = {value}; {why}")]
    Breakdown { iteration: usize, what: &'static str, value: f64, why: &'static str },
    /// GMRES's restart length is 0 (a cycle must take at least one Arnoldi step to move `x`) or
    /// over `limit`, which bounds the basis and the small dense problem a cycle keeps.
    #[error("the GMRES restart length is {value}, but it must be in 1..={limit}")]
    InvalidRestart { value: usize, limit: usize },
    /// The block-Jacobi block size is 0 or over `limit` (`reference::block_jacobi::MAX_BLOCK`).
    #[error("the block-Jacobi block size is {value}, but it must be in 1..={limit}")]
    InvalidBlockSize { value: usize, limit: usize },
    /// The diagonal block of `rows` rows from `first_row` cannot be inverted: it is singular to
    /// working precision, holds NaN or infinities, or its inverse overflows the element type.
    #[error(
        "the diagonal block of rows {first_row}..{} is singular or not finite: block-Jacobi needs it invertible",
        first_row + rows
    )]
    SingularBlock { first_row: usize, rows: usize },
    /// The Chebyshev preconditioner's degree (its products per apply) is over `limit`
    /// (`solve::MAX_CHEBYSHEV_DEGREE`).
    #[error("the Chebyshev degree is {value}, but it must be at most {limit}")]
    InvalidDegree { value: usize, limit: usize },
    /// The power iteration was asked for no steps, or for more than `limit`
    /// (`solve::MAX_POWER_STEPS`).
    #[error("the power iteration's step count is {value}, but it must be in 1..={limit}")]
    InvalidPowerSteps { value: usize, limit: usize },
    /// The incomplete factorisation met a pivot that is zero (or a row without a diagonal entry,
    /// `value` 0) or whose inverse is not finite in the element type, at row `row`.
    #[error("ILU(0) pivot of row {row} is {value}: the incomplete factorisation does not exist")]
    ZeroPivot { row: usize, value: f64 },
    /// IC(0) met a pivot `a_ii - Σ l_ij²` that is not positive (or a row without a diagonal entry,
    /// `value` 0), or one whose square root or inverse is not finite in the element type, at row
    /// `row`: the matrix is not symmetric positive definite, or IC(0) breaks down on it (it exists
    /// for M-matrices and H-matrices with a positive diagonal, not for every SPD matrix).
    #[error("IC(0) pivot of row {row} is {value}: the incomplete Cholesky factorisation does not exist")]
    NonPositivePivot { row: usize, value: f64 },
    /// The relative tolerance is not a number in `[0, 1]` (a NaN would stop no solve).
    #[error("the relative tolerance is {value}, but it must be a number in [0, 1]")]
    InvalidTolerance { value: f64 },
}
