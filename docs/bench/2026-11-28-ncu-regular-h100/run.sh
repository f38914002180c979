#!/usr/bin/env bash
# Call 5: Nsight Compute on Auto's kernel for the three regular matrices short of 93% (f32, f64), and
# on the batched warp-a-row experiment (exp) for wide-400: speed of light, memory, warp states.
tar xJf .gpu/ab.tar.xz -C .gpu
ncu=/usr/local/cuda/bin/ncu
mkdir -p $OUT/ncu
run() { # BIN MATRIX PREC NAME
  timeout 100 $ncu --kernel-name "regex:^spmv_csr_(scalar|vector)_.*$3" --launch-skip 3 --launch-count 1 \
    --clock-control none --cache-control all --section SpeedOfLight --section MemoryWorkloadAnalysis \
    --section WarpStateStats --section Occupancy --section LaunchStats --csv --page details --kill yes \
    $1 --only $2 --precision $3 --no-search --variants vector-c32,scalar --out $OUT/ncu/b-$4 > $OUT/ncu/$4.csv 2> $OUT/ncu/$4.log
  echo "$4 rc=$? $(grep -c '"' $OUT/ncu/$4.csv) lines"
}
for m in wide-400 random-1pct planar; do for p in f32 f64; do run .gpu/ab/new $m $p $m-$p; done; done
run .gpu/ab/exp wide-400 f64 exp-wide-400-f64
run .gpu/ab/exp wide-400 f32 exp-wide-400-f32
rm -rf $OUT/ncu/b-*
tar czf $OUT/ncu.tgz -C $OUT ncu && rm -rf $OUT/ncu
