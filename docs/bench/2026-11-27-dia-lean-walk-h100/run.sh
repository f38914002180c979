#!/usr/bin/env bash
# usage: run.sh TESTS... (runs in host/) then ncu + ab bench
set -u
cd .gpu && tar xJf m.tar.xz && cd ..
M=$PWD/.gpu/m
export SPMV_REQUIRE_GPU=1
nvidia-smi --query-gpu=name --format=csv,noheader
for t in $TESTS; do
  (cd host && $M/$t > $OUT/test-$t.log 2>&1; echo "$t rc=$? $(grep -E '^test result' $OUT/test-$t.log | tail -1)")
done
for t in $MEMCHECK; do
  (cd host && compute-sanitizer --tool memcheck $M/$t > $OUT/memcheck-$t.log 2>&1; echo "memcheck $t rc=$? $(grep -E 'ERROR SUMMARY' $OUT/memcheck-$t.log | tail -1)")
done
ncu=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
m=gpu__time_duration.sum,dram__bytes_read.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed
m+=,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread
m+=,smsp__inst_executed.sum,smsp__thread_inst_executed.sum
m+=,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio
m+=,smsp__issue_active.avg.pct_of_peak_sustained_active
for bin in $NCU_BINS; do
for pair in $NCU_PAIRS; do
  v=${pair%%:*}; k=${pair##*:}
  for mat in $NCU_MATS; do
    "$ncu" --kernel-name "$k" --launch-skip 5 --launch-count 1 --clock-control none --csv --metrics "$m" \
      $M/$bin --only "$mat" --variants "$v" --no-search --precision f32 --out /tmp/ncurun > "$OUT/ncu-$bin-$mat-$v.csv" 2> /dev/null
    rm -rf /tmp/ncurun
  done
done
done
cd $OUT && tar czf ncu.tgz *.csv *.log 2>/dev/null; rm -f $OUT/*.csv $OUT/*.log; cd - >/dev/null
if [ -n "${AB_ARGS:-}" ]; then
  bash $M/scripts/ab-bench.sh $OUT/ab $AB_BINS -- $AB_ARGS
  (cd $OUT && tar czf ab.tgz ab && rm -rf ab)
fi
