//! [`Shape`]: a sparse matrix's rows, columns and stored entries, the one type every format of the
//! crate, host and device, answers `shape()` with; `nrows`, `ncols` and `nnz` follow from it, written
//! once (`shape_accessors!`).

/// The dimensions of a sparse matrix and its stored entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Shape {
    pub nrows: usize,
    pub ncols: usize,
    /// Stored entries: those of the matrix a format was made from (explicit zeros counted), never
    /// a format's padding.
    pub nnz: usize,
}

impl Shape {
    /// Whether the matrix is square, as a solver or a preconditioner needs it.
    pub fn is_square(&self) -> bool {
        self.nrows == self.ncols
    }
}

/// `nrows`, `ncols` and `nnz` for a type with a `shape(&self) -> Shape` method, inside its `impl`.
macro_rules! shape_accessors {
    () => {
        /// Rows ([`Shape::nrows`](crate::Shape::nrows)).
        pub fn nrows(&self) -> usize {
            self.shape().nrows
        }

        /// Columns ([`Shape::ncols`](crate::Shape::ncols)).
        pub fn ncols(&self) -> usize {
            self.shape().ncols
        }

        /// Stored entries, padding not counted ([`Shape::nnz`](crate::Shape::nnz)).
        pub fn nnz(&self) -> usize {
            self.shape().nnz
        }
    };
}
pub(crate) use shape_accessors;
