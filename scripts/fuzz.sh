#!/usr/bin/env bash
# Runs the fuzz targets of fuzz/ for a while each, one at a time, and keeps their corpora.
#
#   scripts/fuzz.sh                  every target, 60 seconds each
#   scripts/fuzz.sh sse 600          one target for ten minutes
#   scripts/fuzz.sh all 600          every target for ten minutes each
#   scripts/fuzz.sh seed 32          before committing: fuzz/seeds/<target> becomes 32 inputs of
#                                    the (minimised) corpus, spread over its sizes
#
# Needs the nightly toolchain and cargo-fuzz (`cargo install cargo-fuzz --locked`). Each target's
# working corpus is fuzz/corpus/<target>, not committed: a run reads it and the committed seeds
# fuzz/seeds/<target>, writes what it finds to the corpus, and minimises it with `cargo fuzz
# cmin`; crashes are written to fuzz/artifacts/<target>/. Prints the
# executions, the coverage (libFuzzer's `cov` and `ft`) and the corpus size of each run. Set
# FUZZ_NICE to change the priority (default 15), FUZZ_ARGS to pass more libFuzzer options.
set -euo pipefail

cd "$(dirname "$0")/.."
TARGETS=(sse openai_stream anthropic_stream message_serde message_list config_file)
target="${1:-all}"
seconds="${2:-60}"
nice_level="${FUZZ_NICE:-15}"

# "<files> files, <KiB> KiB" of the inputs in a corpus directory.
corpus_size() {
    find "$1" -type f -printf '%s\n' |
        awk '{ s += $1; n += 1 } END { printf "%d files, %.0f KiB", n, s / 1024 }'
}

if [[ "$target" == seed ]]; then
    keep="${2:-32}"
    for t in "${TARGETS[@]}"; do
        corpus="fuzz/corpus/$t"
        [[ -d "$corpus" ]] || continue
        seeds="fuzz/seeds/$t"
        mkdir -p "$seeds"
        find "$seeds" -type f -delete
        # Every n/keep-th input in order of size: small and large ones, not only the smallest.
        find "$corpus" -type f -printf '%s %p\n' | sort -n |
            awk -v n="$(find "$corpus" -type f | wc -l)" -v k="$keep" \
                'NR == 1 || int((NR - 1) * k / n) != int((NR - 2) * k / n) { print $2 }' |
            head -n "$keep" | xargs -r cp -t "$seeds" --
        echo "$t: $(corpus_size "$seeds") in $seeds"
    done
    exit 0
elif [[ "$target" == all ]]; then
    selected=("${TARGETS[@]}")
elif [[ " ${TARGETS[*]} " == *" $target "* ]]; then
    selected=("$target")
else
    echo "unknown target '$target'; the targets are: all ${TARGETS[*]}" >&2
    exit 2
fi

mkdir -p fuzz/logs
status=0
for t in "${selected[@]}"; do
    corpus="fuzz/corpus/$t"
    log="fuzz/logs/$t.log"
    mkdir -p "$corpus" "fuzz/seeds/$t"
    args=(-max_total_time="$seconds" -print_final_stats=1)
    if [[ -f "fuzz/dict/$t.dict" ]]; then
        args+=(-dict="fuzz/dict/$t.dict")
    fi
    echo "== $t: ${seconds}s, corpus $corpus"
    # One process, one job: the machine is shared.
    # shellcheck disable=SC2086
    if ! nice -n "$nice_level" cargo +nightly fuzz run "$t" "$corpus" "fuzz/seeds/$t" -- "${args[@]}" ${FUZZ_ARGS:-} \
        >"$log" 2>&1; then
        status=1
        echo "!! $t failed; the crash and its input:" >&2
        grep -E "panicked|ERROR: libFuzzer|Test unit written" "$log" >&2 || tail -n 30 "$log" >&2
    fi
    execs=$(grep -oE "stat::number_of_executed_units: [0-9]+" "$log" | grep -oE "[0-9]+$" || echo "?")
    last=$(grep -E "^#[0-9]+" "$log" | tail -n 1 || true)
    cov=$(grep -oE "cov: [0-9]+" <<<"$last" | grep -oE "[0-9]+" || echo "?")
    ft=$(grep -oE "ft: [0-9]+" <<<"$last" | grep -oE "[0-9]+" || echo "?")
    nice -n "$nice_level" cargo +nightly fuzz cmin "$t" "$corpus" >"fuzz/logs/$t.cmin.log" 2>&1 || true
    echo "   executions: $execs  cov: $cov  ft: $ft  corpus: $(corpus_size "$corpus") (after cmin)"
done
exit "$status"
