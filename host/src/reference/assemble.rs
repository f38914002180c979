//! The CPU reference of a CSR matrix's assembly from COO triples, which the device's
//! ([`CooAssembly`](crate::CooAssembly), `kernels-gpu/src/assemble.rs`) must match bit for bit, a
//! NaN's payload aside (the GPU's arithmetic gives the canonical NaN).

use crate::Result;
use crate::formats::coo::{check_triple_sizes, triple_index_verdict};
use crate::scalar::Scalar;

/// The CSR arrays (row offsets, column indices, values) of the matrix of `dims` (rows, columns)
/// whose entries are the triples `(rows[k], cols[k], values[k])`: sorted by row, then column, the
/// values of a repeated (row, column) pair summed in the order of the triples, as the device sums
/// them, so that both round alike. Any values are taken, NaN and infinities included.
///
/// Refused before anything is allocated, as the device assembly refuses: `cols` or `values` of
/// another length than `rows` ([`Error::DimensionMismatch`](crate::Error::DimensionMismatch)); a
/// dimension past `u32`, more than `kernels_gpu::abi::COO_ASSEMBLE_MAX_ENTRIES` triples, or a row
/// count past [`MAX_ROWS_WITHOUT_ENTRIES`](crate::formats::MAX_ROWS_WITHOUT_ENTRIES) plus
/// [`MAX_ROWS_PER_ENTRY`](crate::formats::MAX_ROWS_PER_ENTRY) per triple (it sizes the row offsets;
/// [`Error::TooLarge`](crate::Error::TooLarge)); the first triple whose row is not below the row
/// count or whose column is not below the column count
/// ([`Error::IndexOutOfRange`](crate::Error::IndexOutOfRange) naming "the row indices" or "the
/// column indices", the row when both are).
pub fn assemble<T: Scalar>(
    dims: (usize, usize),
    rows: &[u32],
    cols: &[u32],
    values: &[T],
) -> Result<(Vec<usize>, Vec<usize>, Vec<T>)> {
    check_triple_sizes(dims, [rows.len(), cols.len(), values.len()])?;
    let first_past = |indices: &[u32], len: usize| {
        indices.iter().position(|&i| i as usize >= len).map(|k| (k, indices[k] as usize))
    };
    triple_index_verdict(dims, first_past(rows, dims.0), first_past(cols, dims.1))?;
    let mut order: Vec<usize> = (0..rows.len()).collect();
    // Stable: a repeated pair's triples stay in input order.
    order.sort_by_key(|&k| (rows[k], cols[k]));
    let mut offsets = vec![0usize; dims.0 + 1];
    let (mut out_cols, mut out_values) = (Vec::new(), Vec::<T>::new());
    let mut last = None;
    for k in order {
        let pair = (rows[k], cols[k]);
        match out_values.last_mut() {
            Some(sum) if last == Some(pair) => *sum = *sum + values[k],
            _ => {
                offsets[pair.0 as usize + 1] += 1;
                out_cols.push(pair.1 as usize);
                out_values.push(values[k]);
                last = Some(pair);
            }
        }
    }
    for r in 0..dims.0 {
        offsets[r + 1] += offsets[r];
    }
    Ok((offsets, out_cols, out_values))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Error;

    #[test]
    fn repeats_sum_in_input_order_and_rows_come_sorted() {
        let (rows, cols) = ([2, 0, 2, 0, 2], [1, 3, 1, 0, 0]);
        let values = [1e8f32, 5.0, -1e8, 7.0, 2.0];
        let (offsets, c, v) = assemble((3, 4), &rows, &cols, &values).unwrap();
        assert_eq!(offsets, [0, 2, 2, 4]);
        assert_eq!(c, [0, 3, 0, 1]);
        // (2, 1): 1e8 + (-1e8) = 0, in input order (not 1e8 + 0.0 + -1e8 with another order).
        assert_eq!(v, [7.0, 5.0, 2.0, 0.0]);
    }

    #[test]
    fn the_earlier_bad_triple_is_named_the_row_first() {
        let refuse = |rows: &[u32], cols: &[u32]| {
            assemble((2, 2), rows, cols, &vec![1.0f64; rows.len()]).unwrap_err().to_string()
        };
        assert_eq!(
            refuse(&[0, 5, 2], &[0, 0, 9]),
            "the row indices: entry 1 is 5, out of range for 2 elements"
        );
        assert_eq!(
            refuse(&[0, 1, 2], &[0, 7, 0]),
            "the column indices: entry 1 is 7, out of range for 2 elements"
        );
        assert_eq!(refuse(&[0, 3], &[0, 3]), "the row indices: entry 1 is 3, out of range for 2 elements");
        assert!(matches!(
            assemble((2, 2), &[0], &[0, 1], &[1.0f32]),
            Err(Error::DimensionMismatch { what: "the column indices", expected: 1, got: 2 })
        ));
        assert!(matches!(
            assemble((2, 2), &[0], &[1], &[1.0f32, 2.0]),
            Err(Error::DimensionMismatch { what: "the values", expected: 1, got: 2 })
        ));
        assert!(matches!(assemble(((1 << 24) + 9, 1), &[0], &[0], &[1.0f32]), Err(Error::TooLarge { .. })));
    }

    #[test]
    fn no_triples_make_empty_rows() {
        let (offsets, c, v) = assemble::<f32>((3, 0), &[], &[], &[]).unwrap();
        assert_eq!((offsets, c.len(), v.len()), (vec![0; 4], 0, 0));
    }
}
