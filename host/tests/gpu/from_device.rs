//! Matrices from CSR arrays already on the device (`DeviceCsr::try_from_device`, its `i32` form and
//! the unchecked twins), from `u32` arrays on the host (`Gpu::upload_csr_u32`, checked as they are
//! copied) and from `u32` arrays in page-locked host memory (`Gpu::upload_csr_pinned`, checked on the
//! device once copied), on the GPU: valid arrays (the common edge cases and random matrices, `u32`
//! and `i32`) give the matrix an upload gives, products checked against the f64 reference; fuzzed
//! arrays, valid or not, get from the device check exactly the error the host check gives (widened
//! to `usize`, a negative index refused first); faults far apart in long arrays, so that many blocks
//! see one, are named at the first; arrays of another context and a capturing stream are refused.
//! Fresh random inputs (seed printed). Without a GPU these tests print why and pass, unless
//! `SPMV_REQUIRE_GPU=1`.

use crate::common::{Csr, check, edge_cases, gpu_or_skip, random_vector, rng};
use cudarc::driver::{DeviceRepr, PinnedHostSlice, ValidAsZeroBits};
use gpu_spmv::{CsrError, CsrRef, DeviceCsr, Error, Gpu, Kernel, Scalar};
use rand::Rng;

/// `CsrRef::try_new` on the arrays widened to `usize`, the first negative index refused first: the
/// error the device check must give.
fn host_verdict(dims: (usize, usize), offsets: &[i64], cols: &[i64], nnz: usize) -> Result<(), CsrError> {
    let widen = |what, a: &[i64]| -> Result<Vec<usize>, CsrError> {
        a.iter()
            .enumerate()
            .map(|(position, &i)| usize::try_from(i).map_err(|_| CsrError::IndexNotUsize { what, position }))
            .collect()
    };
    let (offsets, cols) = (widen("row_offsets", offsets)?, widen("col_indices", cols)?);
    CsrRef::try_new(dims.0, dims.1, &offsets, &cols, &vec![0.0f32; nnz]).map(|_| ())
}

/// The indices as `I`, every one of which fits it in the cases that call this.
fn narrow<I: TryFrom<i64>>(a: &[i64]) -> Vec<I>
where
    I::Error: std::fmt::Debug,
{
    a.iter().map(|&i| I::try_from(i).unwrap()).collect()
}

fn device_i32(
    gpu: &Gpu,
    dims: (usize, usize),
    offsets: &[i64],
    cols: &[i64],
    nnz: usize,
) -> Result<DeviceCsr<f32>, Error> {
    let s = gpu.stream();
    let (o, c) =
        (s.clone_htod(&narrow::<i32>(offsets)).unwrap(), s.clone_htod(&narrow::<i32>(cols)).unwrap());
    DeviceCsr::try_from_device_i32(gpu, dims, o, c, s.clone_htod(&vec![1.0f32; nnz]).unwrap())
        .map_err(Error::from)
}

fn device_u32(
    gpu: &Gpu,
    dims: (usize, usize),
    offsets: &[i64],
    cols: &[i64],
    nnz: usize,
) -> Result<DeviceCsr<f32>, Error> {
    let s = gpu.stream();
    let (o, c) =
        (s.clone_htod(&narrow::<u32>(offsets)).unwrap(), s.clone_htod(&narrow::<u32>(cols)).unwrap());
    DeviceCsr::try_from_device(gpu, dims, o, c, s.clone_htod(&vec![1.0f32; nnz]).unwrap())
        .map_err(Error::from)
}

/// The same arrays through `Gpu::upload_csr_u32`, checked on the host as they are copied.
fn host_u32(
    gpu: &Gpu,
    dims: (usize, usize),
    offsets: &[i64],
    cols: &[i64],
    nnz: usize,
) -> Result<DeviceCsr<f32>, Error> {
    gpu.upload_csr_u32(dims, &narrow::<u32>(offsets), &narrow::<u32>(cols), &vec![1.0f32; nnz])
}

/// `data` in page-locked memory of `gpu`'s context.
fn pinned<E: DeviceRepr + ValidAsZeroBits + Copy>(gpu: &Gpu, data: &[E]) -> PinnedHostSlice<E> {
    let mut p = gpu.pinned_zeroed(data.len()).unwrap();
    p.as_mut_slice().unwrap().copy_from_slice(data);
    p
}

/// The same arrays through `Gpu::upload_csr_pinned`, from page-locked memory, checked on the device.
fn pinned_u32(
    gpu: &Gpu,
    dims: (usize, usize),
    offsets: &[i64],
    cols: &[i64],
    nnz: usize,
) -> Result<DeviceCsr<f32>, Error> {
    let (o, c) = (pinned(gpu, &narrow::<u32>(offsets)), pinned(gpu, &narrow::<u32>(cols)));
    gpu.upload_csr_pinned(dims, &o, &c, &pinned(gpu, &vec![1.0f32; nnz]))
}

fn csr_error(result: Result<DeviceCsr<f32>, Error>) -> Result<(), CsrError> {
    match result {
        Ok(_) => Ok(()),
        Err(Error::InvalidCsr(e)) => Err(e),
        Err(e) => panic!("not a CSR error: {e}"),
    }
}

fn valid_arrays_make_the_uploaded_matrix<T: Scalar>(test: &str) {
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    let mut matrices = edge_cases::<T>(&mut rng);
    matrices.push(("random 3000 x 700", Csr::random(&mut rng, 3000, 700, true, |r| r % 23)));
    for (name, a) in matrices {
        let dims = (a.nrows, a.ncols);
        let s = gpu.stream();
        let u32s = |v: &[usize]| v.iter().map(|&i| u32::try_from(i).unwrap()).collect::<Vec<_>>();
        let i32s = |v: &[usize]| v.iter().map(|&i| i32::try_from(i).unwrap()).collect::<Vec<_>>();
        let values = || s.clone_htod(&a.vals).unwrap();
        let (o, c) = (s.clone_htod(&u32s(&a.offsets)).unwrap(), s.clone_htod(&u32s(&a.cols)).unwrap());
        let checked = DeviceCsr::try_from_device(&gpu, dims, o, c, values()).unwrap();
        let (o, c) = (s.clone_htod(&i32s(&a.offsets)).unwrap(), s.clone_htod(&i32s(&a.cols)).unwrap());
        let signed = DeviceCsr::try_from_device_i32(&gpu, dims, o, c, values()).unwrap();
        let (o, c) = (s.clone_htod(&u32s(&a.offsets)).unwrap(), s.clone_htod(&u32s(&a.cols)).unwrap());
        // SAFETY: the arrays of a valid test matrix.
        let unchecked = unsafe { DeviceCsr::from_device_unchecked(&gpu, dims, o, c, values()) }.unwrap();
        let (o, c) = (s.clone_htod(&i32s(&a.offsets)).unwrap(), s.clone_htod(&i32s(&a.cols)).unwrap());
        // SAFETY: as above, and no index is negative.
        let unchecked_signed =
            unsafe { DeviceCsr::from_device_i32_unchecked(&gpu, dims, o, c, values()) }.unwrap();

        let uploaded = gpu.upload_csr_u32(dims, &u32s(&a.offsets), &u32s(&a.cols), &a.vals).unwrap();
        // cudarc makes no empty page-locked slice: a matrix with no entries has no pinned route.
        let from_pinned = (!a.cols.is_empty()).then(|| {
            let (o, c) = (pinned(&gpu, &u32s(&a.offsets)), pinned(&gpu, &u32s(&a.cols)));
            let m = gpu.upload_csr_pinned(dims, &o, &c, &pinned(&gpu, &a.vals)).unwrap();
            assert_eq!(s.clone_dtoh(m.row_offsets()).unwrap(), u32s(&a.offsets), "{name}: offsets");
            assert_eq!(s.clone_dtoh(m.col_indices()).unwrap(), u32s(&a.cols), "{name}: columns");
            m
        });

        let x = random_vector::<T>(&mut rng, a.ncols);
        let dx = gpu.upload_vector(&x).unwrap();
        let y0 = random_vector::<T>(&mut rng, a.nrows);
        for (how, m) in [
            ("u32", Some(&checked)),
            ("i32", Some(&signed)),
            ("unchecked", Some(&unchecked)),
            ("unchecked i32", Some(&unchecked_signed)),
            ("uploaded from u32", Some(&uploaded)),
            ("uploaded from pinned u32", from_pinned.as_ref()),
        ]
        .into_iter()
        .filter_map(|(how, m)| Some((how, m?)))
        {
            assert_eq!(m.stats(), &a.view().stats(), "{name}, {how}");
            let mut dy = gpu.upload_vector(&y0).unwrap();
            gpu.spmv_with(Kernel::Auto, T::from_f64(0.5), m, &dx, T::from_f64(-1.5), &mut dy).unwrap();
            let y = dy.to_host(&gpu).unwrap();
            check(&format!("{name}, {how}"), &a, T::from_f64(0.5), &x, T::from_f64(-1.5), &y0, &y);
        }
    }
}

#[test]
fn gpu_valid_device_arrays_f32() {
    valid_arrays_make_the_uploaded_matrix::<f32>("gpu_valid_device_arrays_f32");
}

#[test]
fn gpu_valid_device_arrays_f64() {
    valid_arrays_make_the_uploaded_matrix::<f64>("gpu_valid_device_arrays_f64");
}

/// Arrays near valid, each perturbed at random (an offset or column index changed, often out of
/// range or negative; a length off by one), through the device check of both index types.
#[test]
fn gpu_device_check_errors_equal_the_host_check() {
    let test = "gpu_device_check_errors_equal_the_host_check";
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    for case in 0..1500 {
        let nrows = rng.random_range(0..40usize);
        let ncols = rng.random_range(0..30usize);
        let a = Csr::<f32>::random(&mut rng, nrows, ncols, case % 2 == 0, |_| 3);
        let mut offsets: Vec<i64> = a.offsets.iter().map(|&o| o as i64).collect();
        let mut cols: Vec<i64> = a.cols.iter().map(|&c| c as i64).collect();
        let mut nnz = cols.len();
        let mut dims = (nrows, ncols);
        for _ in 0..rng.random_range(0..3) {
            match rng.random_range(0..7) {
                0 if !offsets.is_empty() => {
                    let i = rng.random_range(0..offsets.len());
                    offsets[i] = rng.random_range(-2..nnz as i64 + 3);
                }
                1 if !cols.is_empty() => {
                    let i = rng.random_range(0..cols.len());
                    cols[i] = rng.random_range(-2..ncols as i64 + 3);
                }
                2 => nnz = (nnz + 1).saturating_sub(rng.random_range(0..3)),
                3 => dims.0 = (dims.0 + 1).saturating_sub(rng.random_range(0..3)),
                4 if !cols.is_empty() => {
                    cols.pop();
                }
                5 => dims.1 = dims.1.saturating_sub(1),
                _ => offsets.push(nnz as i64),
            }
        }
        let expected = host_verdict(dims, &offsets, &cols, nnz);
        let signed = csr_error(device_i32(&gpu, dims, &offsets, &cols, nnz));
        assert_eq!(signed, expected, "case {case}, i32: {dims:?} {offsets:?} {cols:?} nnz {nnz}");
        if offsets.iter().chain(&cols).all(|&i| i >= 0) {
            let unsigned = csr_error(device_u32(&gpu, dims, &offsets, &cols, nnz));
            assert_eq!(unsigned, expected, "case {case}, u32: {dims:?} {offsets:?} {cols:?} nnz {nnz}");
            let uploaded = csr_error(host_u32(&gpu, dims, &offsets, &cols, nnz));
            assert_eq!(uploaded, expected, "case {case}, upload: {dims:?} {offsets:?} {cols:?} nnz {nnz}");
            if !offsets.is_empty() && !cols.is_empty() && nnz > 0 {
                let from_pinned = csr_error(pinned_u32(&gpu, dims, &offsets, &cols, nnz));
                assert_eq!(
                    from_pinned, expected,
                    "case {case}, pinned: {dims:?} {offsets:?} {cols:?} nnz {nnz}"
                );
            }
        }
    }
}

/// Long arrays with several faults of one kind, far apart: the first is named, whichever block
/// sees it first.
#[test]
fn gpu_device_check_names_the_first_of_faults_far_apart() {
    let test = "gpu_device_check_names_the_first_of_faults_far_apart";
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    let a = Csr::<f32>::random(&mut rng, 400_000, 50_000, true, |r| r % 13);
    let offsets: Vec<i64> = a.offsets.iter().map(|&o| o as i64).collect();
    let cols: Vec<i64> = a.cols.iter().map(|&c| c as i64).collect();
    let (dims, nnz) = ((a.nrows, a.ncols), cols.len());
    for _ in 0..5 {
        let mut bad_cols = cols.clone();
        let mut bad_offsets = offsets.clone();
        let mut picks: Vec<usize> = (0..4).map(|_| rng.random_range(0..nnz)).collect();
        picks.sort_unstable();
        for &k in &picks {
            bad_cols[k] = a.ncols as i64 + k as i64 % 7;
        }
        let expected = host_verdict(dims, &offsets, &bad_cols, nnz);
        assert!(matches!(expected, Err(CsrError::ColumnOutOfRange { entry, .. }) if entry == picks[0]));
        assert_eq!(csr_error(device_u32(&gpu, dims, &offsets, &bad_cols, nnz)), expected);
        bad_cols[picks[2]] = -1;
        let expected = host_verdict(dims, &offsets, &bad_cols, nnz);
        assert_eq!(csr_error(device_i32(&gpu, dims, &offsets, &bad_cols, nnz)), expected);

        let mut rows: Vec<usize> = (0..3).map(|_| rng.random_range(1..a.nrows)).collect();
        rows.sort_unstable();
        for &r in &rows {
            bad_offsets[r] = bad_offsets[r + 1] + 1;
        }
        let expected = host_verdict(dims, &bad_offsets, &cols, nnz);
        assert!(matches!(expected, Err(CsrError::OffsetsDecrease { .. })), "{expected:?}");
        assert_eq!(csr_error(device_u32(&gpu, dims, &bad_offsets, &cols, nnz)), expected);
        assert_eq!(csr_error(device_i32(&gpu, dims, &bad_offsets, &cols, nnz)), expected);
    }
}

/// `upload_csr_u32` on arrays of several staging chunks (16 MiB, 4 Mi indices): a valid matrix gives
/// the product of an upload from `usize` indices; column faults in the second and third chunks are
/// named at the first, as the host check names it.
#[test]
fn gpu_upload_from_u32_across_staging_chunks() {
    let test = "gpu_upload_from_u32_across_staging_chunks";
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    let a = Csr::<f32>::random(&mut rng, 1_000_000, 300_000, true, |r| 9 + r % 3);
    let dims = (a.nrows, a.ncols);
    let u32s = |v: &[usize]| v.iter().map(|&i| u32::try_from(i).unwrap()).collect::<Vec<_>>();
    let (offsets, mut cols) = (u32s(&a.offsets), u32s(&a.cols));
    assert!(cols.len() > 2 * (4 << 20), "{} entries: three chunks", cols.len());
    let uploaded = gpu.upload_csr_u32(dims, &offsets, &cols, &a.vals).unwrap();
    let x = random_vector::<f32>(&mut rng, a.ncols);
    let (dx, mut dy) = (gpu.upload_vector(&x).unwrap(), gpu.zeros::<f32>(a.nrows).unwrap());
    gpu.spmv(1.0, &uploaded, &dx, 0.0, &mut dy).unwrap();
    check("across chunks", &a, 1.0, &x, 0.0, &vec![0.0; a.nrows], &dy.to_host(&gpu).unwrap());

    let (second, third) = (rng.random_range(4 << 20..8 << 20), rng.random_range(8 << 20..cols.len()));
    cols[third] = a.ncols as u32;
    cols[second] = u32::MAX;
    let wide = |v: &[u32]| v.iter().map(|&i| i64::from(i)).collect::<Vec<_>>();
    let expected = host_verdict(dims, &wide(&offsets), &wide(&cols), cols.len());
    assert!(matches!(expected, Err(CsrError::ColumnOutOfRange { entry, .. }) if entry == second));
    assert_eq!(csr_error(gpu.upload_csr_u32(dims, &offsets, &cols, &a.vals)), expected);
    let (o, c, v) = (pinned(&gpu, &offsets), pinned(&gpu, &cols), pinned(&gpu, &a.vals));
    assert_eq!(csr_error(gpu.upload_csr_pinned(dims, &o, &c, &v)), expected, "from pinned memory");
}

/// `upload_csr_pinned` refuses page-locked memory of another context (which its copy would treat as
/// pageable), a stream that captures, and sizes past the kernels' indices, before it allocates; a
/// caller's buffer is written again after a successful upload without disturbing the matrix.
#[test]
fn gpu_pinned_upload_refusals_and_reuse() {
    let test = "gpu_pinned_upload_refusals_and_reuse";
    let Some(gpu) = gpu_or_skip(test) else { return };
    let other = Gpu::new().unwrap();
    let (offsets, cols, values) = ([0u32, 1, 2], [1u32, 0], [1.0f64, 2.0]);
    let (o, c, mut v) = (pinned(&gpu, &offsets), pinned(&gpu, &cols), pinned(&gpu, &values));
    let foreign = pinned(&other, &cols);
    let result = gpu.upload_csr_pinned((2, 2), &o, &foreign, &v);
    assert!(matches!(result, Err(Error::ForeignBuffer("the column indices"))), "{result:?}");
    let result = gpu.upload_csr_pinned((usize::MAX, 2), &o, &c, &v);
    assert!(matches!(result, Err(Error::TooLarge { .. })), "{result:?}");
    let mut in_capture = None;
    let captured = gpu.capture(|| {
        in_capture = Some(gpu.upload_csr_pinned((2, 2), &o, &c, &v).map(drop));
        Ok(())
    });
    drop(captured);
    assert!(matches!(in_capture, Some(Err(Error::Unsupported(_)))), "{in_capture:?}");
    let a = gpu.upload_csr_pinned((2, 2), &o, &c, &v).unwrap();
    v.as_mut_slice().unwrap().copy_from_slice(&[5.0, 6.0]);
    assert_eq!(gpu.stream().clone_dtoh(a.values()).unwrap(), values, "the matrix keeps its values");
}

#[test]
fn gpu_device_arrays_of_another_context_or_in_a_capture_are_refused() {
    let test = "gpu_device_arrays_of_another_context_or_in_a_capture_are_refused";
    let Some(gpu) = gpu_or_skip(test) else { return };
    let other = Gpu::new().unwrap();
    let (s, t) = (gpu.stream(), other.stream());
    let offsets = [0u32, 1, 2];
    let cols = [1u32, 0];
    let values = [1.0f64, 2.0];
    let result = DeviceCsr::try_from_device(
        &gpu,
        (2, 2),
        s.clone_htod(&offsets).unwrap(),
        t.clone_htod(&cols).unwrap(),
        s.clone_htod(&values).unwrap(),
    )
    .map_err(Error::from);
    assert!(matches!(result, Err(Error::ForeignBuffer("the column indices"))), "{result:?}");
    let result = DeviceCsr::try_from_device(
        &gpu,
        (2, 2),
        s.clone_htod(&offsets).unwrap(),
        s.clone_htod(&cols).unwrap(),
        t.clone_htod(&values).unwrap(),
    )
    .map_err(Error::from);
    assert!(matches!(result, Err(Error::ForeignBuffer("the values"))), "{result:?}");
    let (o, c, v) =
        (s.clone_htod(&offsets).unwrap(), s.clone_htod(&cols).unwrap(), s.clone_htod(&values).unwrap());
    // Refused while the stream captures, with the arrays handed back rather than freed there (which
    // fails during a capture); they then make the matrix once the capture has ended.
    let mut refused = None;
    let captured = gpu.capture(|| {
        refused = DeviceCsr::try_from_device(&gpu, (2, 2), o, c, v).err();
        Ok(())
    });
    drop(captured); // a graph of no work
    let refused = refused.expect("refused while the stream captures");
    assert!(matches!(refused.error(), Error::Unsupported(_)), "{refused:?}");
    let (o, c, v) = refused.into_arrays();
    let a = DeviceCsr::try_from_device(&gpu, (2, 2), o, c, v).unwrap();
    assert_eq!((a.nrows(), a.nnz()), (2, 2));
}

/// Sixteen uploads from `u32` on one `Gpu` at once, from rayon's tasks, each of arrays larger than
/// one staging buffer: a task whose thread holds the stages may take up another upload's task
/// while its pass waits for its pieces, which must then go without the stages rather than wait for
/// them (a deadlock before). Every matrix's arrays come back as they were given.
#[test]
fn gpu_parallel_uploads_on_one_gpu() {
    use rayon::prelude::*;
    let test = "gpu_parallel_uploads_on_one_gpu";
    let Some(gpu) = gpu_or_skip(test) else { return };
    let (nrows, per_row) = (500_000u32, 9u32);
    let offsets: Vec<u32> = (0..=nrows).map(|r| r * per_row).collect();
    let cols: Vec<u32> = (0..nrows).flat_map(|r| (0..per_row).map(move |k| (r + k * 7) % nrows)).collect();
    assert!(cols.len() * 4 > 16 << 20, "{} entries: more than one stage", cols.len());
    let values = |m: usize| (0..cols.len()).map(|i| (i % 1000 + m) as f32).collect::<Vec<_>>();
    let dims = (nrows as usize, nrows as usize);
    let uploaded: Vec<_> = (0..16)
        .into_par_iter()
        .map(|m| {
            let v = values(m);
            (m, gpu.upload_csr_u32(dims, &offsets, &cols, &v).unwrap())
        })
        .collect();
    gpu.synchronize().unwrap();
    let s = gpu.stream();
    for (m, a) in &uploaded {
        assert_eq!(s.clone_dtoh(a.row_offsets()).unwrap(), offsets, "matrix {m}: offsets");
        assert_eq!(s.clone_dtoh(a.col_indices()).unwrap(), cols, "matrix {m}: columns");
        assert_eq!(s.clone_dtoh(a.values()).unwrap(), values(*m), "matrix {m}: values");
    }
}

/// `Gpu::pinned_zeroed`: zeroed memory of the context, and the refusals before any allocation.
#[test]
fn gpu_pinned_zeroed_is_zeroed_and_bounded() {
    let test = "gpu_pinned_zeroed_is_zeroed_and_bounded";
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut p = gpu.pinned_zeroed::<f64>(1000).unwrap();
    assert_eq!(p.len(), 1000);
    assert!(p.as_slice().unwrap().iter().all(|&v| v == 0.0));
    p.as_mut_slice().unwrap()[999] = 2.5;
    assert!(std::sync::Arc::ptr_eq(p.context(), gpu.context()), "pinned for this Gpu's context");
    assert!(matches!(gpu.pinned_zeroed::<u32>(0), Err(Error::Unsupported(_))));
    let past = u32::MAX as usize + 1;
    assert!(matches!(
        gpu.pinned_zeroed::<u32>(past),
        Err(Error::TooLarge { value, limit, .. }) if value == past && limit == u32::MAX as usize
    ));
    assert!(matches!(gpu.pinned_zeroed::<u32>(usize::MAX), Err(Error::TooLarge { .. })));
}
