#!/usr/bin/env bash
# ncu on the DIA and compressed ELL kernels, stencil2d-5 f32 (one launch each, cold caches).
set -u
out=$1
ncu=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
m=gpu__time_duration.sum,dram__bytes_read.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed
m+=,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,launch__occupancy_limit_registers
m+=,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio
m+=,smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio
m+=,smsp__average_warps_issue_stalled_wait_per_issue_active.ratio
m+=,smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio
m+=,smsp__average_warp_latency_per_inst_issued.ratio
m+=,l1tex__t_sector_hit_rate.pct,lts__t_sector_hit_rate.pct,smsp__inst_executed.sum
for pair in "dia-f32:spmv_dia_f32" "dia-bf16:spmv_dia_bf16_f32" "compressed-ell-f32:spmv_compressed_ell_f32" "compressed-ell-bf16:spmv_compressed_ell_bf16_f32"; do
  v=${pair%%:*}; k=${pair##*:}
  for mat in stencil2d-5 stencil3d-7; do
    echo "=== $mat $v"
    "$ncu" --kernel-name "$k" --launch-skip 5 --launch-count 1 --clock-control none --csv --metrics "$m" \
      .gpu/m/spmv-bench --only "$mat" --variants "$v" --no-search --precision f32 --out "$out/run-$mat-$v" > "$out/ncu-$mat-$v.csv" 2> "$out/err-$mat-$v.txt"
    rm -rf "$out/run-$mat-$v"
  done
done
