#!/usr/bin/env bash
# Where the bytes of Kernel::Auto's product go (issue 13, item 1): runs the bundled benchmark under
# NVIDIA Nsight Compute on the GPU machine, once per suite matrix and precision, profiles the first
# launches of Auto's CSR kernel or of its compressed columns' (Auto is the first kernel the
# benchmark times on each matrix) with cold caches (ncu flushes them before each replay, as the
# benchmark's rotation of operands does) and the GPU's own clocks, then stops the benchmark. Writes one CSV per run and a summary table of DRAM
# bytes, L1 and L2 sectors and load requests beside the bytes the floor counts (docs/PERF.md).
#
# Usage, from the project root:
#   ../shared/tools/gpu-bundle -p spmv-bench     # here: the benchmark binary into .gpu/bin/
#   scripts/ncu-auto.sh OUT_DIR [MATRIX...]       # on the GPU machine (default: the regular suite)
# Environment: NCU (the executable, when not on PATH or under /usr/local/cuda*/bin), BENCH_ARGS (extra
# benchmark arguments, e.g. --small).
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:?usage: scripts/ncu-auto.sh OUT_DIR [MATRIX...]}
shift
matrices=("$@")
[ ${#matrices[@]} -gt 0 ] || matrices=(stencil2d-5 stencil3d-7 fem3d-27 band-64 wide-400 random-1pct planar)
ncu=${NCU:-$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)}
[ -x "$ncu" ] || { echo "ncu not found (set NCU)"; exit 1; }
mkdir -p "$out"

# Per launch: time, DRAM traffic, L2 sectors requested by L1 (reads), L1 sectors and requests of
# global loads (sectors per request: 4 for a fully used 128-byte line of a warp), L1 hit rate,
# achieved occupancy, and the launch's shape.
metrics=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum
metrics+=,lts__t_sectors_srcunit_tex_op_read.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum
metrics+=,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sector_hit_rate.pct
metrics+=,sm__warps_active.avg.pct_of_peak_sustained_active,dram__throughput.avg.pct_of_peak_sustained_elapsed
metrics+=,launch__grid_size,launch__block_size,launch__registers_per_thread

status=0
for m in "${matrices[@]}"; do
    for p in f32 f64; do
        echo "=== $m $p"
        # Skip the warm-up launches; profile two of the timed ones, then stop the benchmark.
        # shellcheck disable=SC2086
        "$ncu" --kernel-name "regex:^spmv_(csr_(param|balanced|scalar|vector)|compressed_c[0-9]+)_.*$p" --launch-skip 3 \
            --launch-count 2 --clock-control none --cache-control all --metrics "$metrics" --csv \
            --kill yes "$root/.gpu/bin/spmv-bench" --only "$m" --precision "$p" --no-search \
            --out "$out/bench-$m-$p" ${BENCH_ARGS:-} >"$out/$m-$p.csv" 2>"$out/$m-$p.log" || true
        grep -q '"gpu__time_duration.sum"' "$out/$m-$p.csv" || { echo "no profile: see $m-$p.log"; status=1; }
    done
done

# One line per profiled launch: the metric values in the order above.
python3 - "$out" <<'PY'
import csv, glob, os, sys
out = sys.argv[1]
rows = []
for path in sorted(glob.glob(os.path.join(out, "*.csv"))):
    with open(path) as f:
        lines = [l for l in f if l.startswith('"')]
    by_launch = {}
    for r in csv.DictReader(lines):
        key = (r["ID"], r["Kernel Name"])
        by_launch.setdefault(key, {})[r["Metric Name"]] = (r["Metric Value"], r["Metric Unit"])
    for (launch, kernel), m in by_launch.items():
        rows.append((os.path.basename(path)[:-4], launch, kernel, m))
with open(os.path.join(out, "summary.txt"), "w") as s:
    for name, launch, kernel, m in rows:
        fields = " ".join(f"{k}={v[0]}{v[1]}" for k, v in sorted(m.items()))
        line = f"{name} #{launch} {kernel} {fields}"
        print(line)
        s.write(line + "\n")
PY
exit $status
