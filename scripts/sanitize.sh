#!/usr/bin/env bash
# Runs every test binary bundled by ../shared/tools/gpu-bundle under NVIDIA's compute-sanitizer, once
# per tool (memcheck, racecheck and synccheck by default), on the GPU machine: plain bash, no Rust
# there. Each binary runs in its package folder with SPMV_REQUIRE_GPU=1, as .gpu/run-tests.sh runs it.
# Prints one summary line per tool and exits non-zero if any tool reported an error or any test failed.
#
# Usage, from the project root:
#   ../shared/tools/gpu-bundle -p gpu-spmv        # here: build and bundle the test binaries into .gpu/
#   scripts/sanitize.sh [--tool NAME]... [--bin GLOB] [-- TEST-ARGS]    # on the GPU machine
# e.g.  scripts/sanitize.sh --tool racecheck --bin 'gpu-*' -- formats::gpu_brc
# (the library's GPU tests are one binary, `gpu-test` in the bundle, with a module per area: a name
# filter such as `formats::` picks a module's tests, `formats::gpu_brc` some of them).
# Through the device tool, with the logs brought back:
#   device run  command="SANITIZE_LOGS=$OUT/sanitize scripts/sanitize.sh"  carry=[".gpu"]
# (a run has 10 minutes: split by --tool, --bin or a module filter when the sanitizers' slowdown
# needs it).
#
# --tool NAME   a compute-sanitizer tool (repeatable); default memcheck, racecheck, synccheck
# --bin GLOB    only the bundled binaries whose names match GLOB (default: all)
# TEST-ARGS     passed to every test binary (a name filter, --test-threads=1, ...)
# Environment: COMPUTE_SANITIZER (the executable, when not on PATH or under /usr/local/cuda*/bin),
# SANITIZER_ARGS (extra options for every tool), SANITIZE_LOGS (the log folder, default .gpu/sanitize).
#
# The racecheck tool is the one that would catch a missing fence or barrier in the long-row and BRC
# combine paths (atomics and fences across blocks); synccheck catches barriers not reached by every
# thread (the warp-uniform loops the vector kernels rely on); memcheck, out-of-bounds accesses and leaks.
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
bundle="$root/.gpu"
tools=()
pattern='*'
test_args=()
while [ $# -gt 0 ]; do
    case "$1" in
        --tool) tools+=("${2:?--tool needs a name}"); shift 2 ;;
        --bin) pattern="${2:?--bin needs a glob}"; shift 2 ;;
        --) shift; test_args=("$@"); break ;;
        *) echo "sanitize: unknown argument $1 (see the header of $0)" >&2; exit 2 ;;
    esac
done
[ ${#tools[@]} -gt 0 ] || tools=(memcheck racecheck synccheck)

[ -f "$bundle/run-tests.sh" ] || { echo "sanitize: no $bundle/run-tests.sh: run ../shared/tools/gpu-bundle first" >&2; exit 2; }

sanitizer=${COMPUTE_SANITIZER:-$(command -v compute-sanitizer || true)}
if [ -z "$sanitizer" ]; then
    for candidate in /usr/local/cuda/bin/compute-sanitizer /usr/local/cuda-*/bin/compute-sanitizer; do
        [ -x "$candidate" ] && { sanitizer=$candidate; break; }
    done
fi
[ -n "$sanitizer" ] && [ -x "$sanitizer" ] || { echo "sanitize: compute-sanitizer not found (set COMPUTE_SANITIZER)" >&2; exit 2; }
echo "sanitize: $("$sanitizer" --version | tail -n 1)"

# The binaries and their package folders, from the lines gpu-bundle writes: echo "=== NAME (in DIR)".
names=()
dirs=()
while IFS=$'\t' read -r name dir; do
    # shellcheck disable=SC2053 # the glob is the point
    [[ $name == $pattern ]] || continue
    names+=("$name")
    dirs+=("$dir")
done < <(sed -n 's/^echo "=== \(.*\) (in \(.*\))"$/\1\t\2/p' "$bundle/run-tests.sh")
[ ${#names[@]} -gt 0 ] || { echo "sanitize: no bundled test binary matches '$pattern'" >&2; exit 2; }

# Every option the tools share. The CPU-only test binaries never initialise CUDA: newer sanitizers
# count that as an error unless told not to.
common=(--error-exitcode 99 --print-limit 100)
if "$sanitizer" --help 2>/dev/null | grep -q -- '--require-cuda-init'; then
    common+=(--require-cuda-init no)
fi
read -r -a extra <<< "${SANITIZER_ARGS:-}"

logs=${SANITIZE_LOGS:-$bundle/sanitize}
mkdir -p "$logs"
export SPMV_REQUIRE_GPU=1
status=0
summaries=()
for tool in "${tools[@]}"; do
    case "$tool" in
        memcheck) tool_args=(--leak-check full) ;;
        *) tool_args=() ;;
    esac
    errors=0
    failed=()
    for i in "${!names[@]}"; do
        name=${names[$i]}
        log="$logs/$tool-$name.log"
        echo "=== $tool: $name (in ${dirs[$i]})"
        (cd "$root/${dirs[$i]}" && "$sanitizer" --tool "$tool" "${common[@]}" "${tool_args[@]}" "${extra[@]}" \
            "$bundle/tests/$name" "${test_args[@]}") > "$log" 2>&1
        rc=$?
        # "========= ERROR SUMMARY: N errors" (racecheck and synccheck print it too).
        found=$(sed -n 's/.*ERROR SUMMARY: \([0-9][0-9]*\) error.*/\1/p' "$log" | awk '{s += $1} END {print s + 0}')
        errors=$((errors + found))
        grep -E '^test result:|ERROR SUMMARY|RACECHECK SUMMARY|SKIPPED' "$log" | sed 's/^/    /'
        if [ "$rc" -ne 0 ] || [ "$found" -ne 0 ]; then
            failed+=("$name (exit $rc, $found errors; log $log)")
        fi
    done
    if [ ${#failed[@]} -eq 0 ]; then
        summaries+=("$tool: PASS, ${#names[@]} binaries, 0 errors")
    else
        status=1
        summaries+=("$tool: FAIL, $errors errors; failed: ${failed[*]}")
    fi
done

echo
printf 'SANITIZE %s\n' "${summaries[@]}"
exit $status
