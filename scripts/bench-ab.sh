#!/usr/bin/env bash
# Compares builds of the bench binary (examples/bench.rs) side by side, on the stream
# scenario, away from the stack placement that moves a single run's figures more than most
# changes do (BENCHMARKS.md, "Round 9"): each binary runs with address-space randomisation off
# (`setarch -R`) once per stack offset (the environment padded to move the stack), the
# binaries in turn, and the medians over the offsets are printed.
#
#   cargo build --release --example bench && cp target/release/examples/bench /tmp/bench.a
#   ... change, build again, cp to /tmp/bench.b ...
#   scripts/bench-ab.sh /tmp/bench.a /tmp/bench.b
#
# Give the binaries paths of one length: the path is on the stack too.
#
#   BENCH_KS="0 5 10"       processor counts (default: 5)
#   BENCH_OFFSETS="0 1024"  stack offsets in bytes (default: eight, 0 to 3584)
#
# Prints, per binary, each configuration's median ratio to the hand-written loop and median
# time per chunk, at N = 10,000 and 100,000. Needs setarch (util-linux) and jq.
set -euo pipefail

if [ "$#" -lt 1 ]; then
    echo "usage: scripts/bench-ab.sh BENCH_BINARY..." >&2
    exit 2
fi
for tool in setarch jq; do
    command -v "$tool" >/dev/null 2>&1 || { echo "bench-ab: $tool is missing" >&2; exit 1; }
done
KS="${BENCH_KS:-5}"
OFFSETS="${BENCH_OFFSETS:-0 512 1024 1536 2048 2560 3072 3584}"
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT

for offset in $OFFSETS; do
    pad="$(head -c "$offset" /dev/zero | tr '\0' x)"
    for i in $(seq 1 "$#"); do
        bin="${!i}"
        # shellcheck disable=SC2086 # the counts are separate arguments
        BENCH_AB_PAD="$pad" setarch "$(uname -m)" -R "$bin" stream $KS >>"$OUT/$i.jsonl"
    done
done

for i in $(seq 1 "$#"); do
    echo "${!i}"
    jq -rs '
        def median: sort | if length % 2 == 1 then .[length / 2 | floor]
            else (.[length / 2 - 1] + .[length / 2]) / 2 end;
        group_by([.dispatch, .k, .n])
        | map({d: .[0].dispatch, k: .[0].k, n: .[0].n,
               r: (map(.ratio_to_baseline) | median), ns: (map(.ns_per_chunk) | median)})
        | sort_by(.k, .n, .d)[]
        | select(.d != "adapter")
        | "  \(.d) K=\(.k) N=\(.n): \(.r * 1000 | round / 1000)x, \(.ns * 10 | round / 10) ns"
    ' "$OUT/$i.jsonl"
done
