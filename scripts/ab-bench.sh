#!/usr/bin/env bash
# A/B (or A/B/C...) of benchmark binaries in one call on the GPU machine: each binary runs the same
# benchmark arguments into OUT/<its file name>/, the second and later with `--compare` against the
# first's results.json (what got 5% faster or slower, in its log). The run folders are packed into
# OUT/runs.tgz and removed, since the device tool returns only so many files; the logs stay beside
# it. Binaries run one after the other, so a long run's clocks and temperature drift falls on the
# later ones: run the baseline again last (name a copy B2) when the differences are small.
#
# Usage, from the project root on the GPU machine:
#   scripts/ab-bench.sh OUT BIN_A BIN_B [BIN...] -- BENCH_ARGS...
# For example, with `main`'s binary and an experiment's copied into .gpu/extra/:
#   scripts/ab-bench.sh "$OUT" .gpu/extra/bench-main .gpu/extra/bench-exp -- \
#       --only stencil,fem3d,band --variants scalar,vector --no-search --precision both --summary
set -uo pipefail

out=${1:?usage: scripts/ab-bench.sh OUT BIN_A BIN_B [BIN...] -- BENCH_ARGS...}
shift
bins=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
    bins+=("$1")
    shift
done
[ "${1:-}" = "--" ] && shift
[ ${#bins[@]} -ge 2 ] || { echo "ab-bench: give at least two binaries before --"; exit 2; }
mkdir -p "$out"

first=""
status=0
for bin in "${bins[@]}"; do
    name=$(basename "$bin")
    compare=()
    [ -n "$first" ] && compare=(--compare "$out/$first/results.json")
    start=$(date +%s)
    "$bin" "$@" --out "$out/$name" "${compare[@]}" > "$out/$name.log" 2>&1
    rc=$?
    echo "$name: exit $rc in $(( $(date +%s) - start )) s"
    [ $rc -eq 0 ] || status=1
    [ -n "$first" ] || first=$name
done

folders=()
for bin in "${bins[@]}"; do
    [ -d "$out/$(basename "$bin")" ] && folders+=("$(basename "$bin")")
done
if [ ${#folders[@]} -gt 0 ]; then
    tar czf "$out/runs.tgz" -C "$out" "${folders[@]}" && (cd "$out" && rm -rf "${folders[@]}")
fi
exit $status
