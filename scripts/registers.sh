#!/usr/bin/env bash
# The registers and spills of every entry of the PTX modules, as ptxas compiles them for one GPU
# architecture. Run offline, ptxas gives the counts the driver's compiler uses when it loads the
# module (Nsight Compute's launch__registers_per_thread agreed on every entry compared,
# docs/PERF.md section 33), so this is the census of what each entry gets, budgeted
# (`kernels_gpu::abi::REGISTER_BUDGETS`, `.maxnreg` in the PTX) or not, without launching anything.
# An f64 walk at exactly 32 registers is the sign section 32 found: the compiler holding it to the
# count at which 64 warps fit an SM, its loads issued in rounds.
#
# Usage, on the GPU machine (ptxas comes with the CUDA toolkit there; none is needed here):
#   scripts/registers.sh [ARCH [PTX...]]     # default: sm_90, host/ptx/kernels*.ptx
# Prints one line per entry: module, entry, registers, bytes of spill stores, bytes of spill loads.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
arch=${1:-sm_90}
shift || true
modules=("$@")
[ ${#modules[@]} -gt 0 ] || modules=("$root"/host/ptx/kernels*.ptx)
ptxas=${PTXAS:-$({ command -v ptxas || ls /usr/local/cuda*/bin/ptxas 2>/dev/null | head -1; } || true)}
[ -x "$ptxas" ] || { echo "ptxas not found (set PTXAS)"; exit 1; }

for module in "${modules[@]}"; do
    # ptxas -v reports, per entry: "Compiling entry function 'NAME'", then "N bytes stack frame,
    # N bytes spill stores, N bytes spill loads", then "Used N registers"; its errors pass through.
    "$ptxas" -arch="$arch" -v "$module" -o /dev/null 2>&1 | awk -v module="$(basename "$module")" '
        /error|fatal/ { print > "/dev/stderr" }
        /Compiling entry function/ { split($0, q, "\047"); entry = q[2]; stores = 0; loads = 0 }
        /bytes spill stores/ {
            for (i = 1; i <= NF; i++) {
                if ($(i + 1) == "bytes" && $(i + 2) == "spill" && $(i + 3) ~ /^stores/) stores = $i
                if ($(i + 1) == "bytes" && $(i + 2) == "spill" && $(i + 3) ~ /^loads/) loads = $i
            }
        }
        /Used [0-9]+ registers/ && entry != "" {
            for (i = 1; i <= NF; i++) if ($i == "Used") registers = $(i + 1)
            print module, entry, registers, stores, loads
            entry = ""
        }'
done
