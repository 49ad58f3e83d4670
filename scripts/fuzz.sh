#!/usr/bin/env bash
# Runs the fuzz targets of fuzz/ for a while each, one at a time, and keeps their corpora.
#
#   scripts/fuzz.sh                  every target, 60 seconds each
#   scripts/fuzz.sh sse 600          one target for ten minutes
#   scripts/fuzz.sh all 600          every target for ten minutes each
#   scripts/fuzz.sh trim 64          before committing: keeps the smallest inputs of each
#                                    (minimised) corpus, up to 64 KiB a target
#
# Needs the nightly toolchain and cargo-fuzz (`cargo install cargo-fuzz --locked`). Each target's
# corpus is fuzz/corpus/<target> (seeded from the committed files, grown by the run, then
# minimised with `cargo fuzz cmin`); crashes are written to fuzz/artifacts/<target>/. Prints the
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

if [[ "$target" == trim ]]; then
    budget=$(( ${2:-64} * 1024 ))
    for t in "${TARGETS[@]}"; do
        corpus="fuzz/corpus/$t"
        [[ -d "$corpus" ]] || continue
        total=0
        while read -r size file; do
            total=$(( total + size ))
            if (( total > budget )); then rm -- "$file"; fi
        done < <(find "$corpus" -type f -printf '%s %p\n' | sort -n)
        echo "$t: $(corpus_size "$corpus")"
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
    mkdir -p "$corpus"
    args=(-max_total_time="$seconds" -print_final_stats=1)
    if [[ -f "fuzz/dict/$t.dict" ]]; then
        args+=(-dict="fuzz/dict/$t.dict")
    fi
    echo "== $t: ${seconds}s, corpus $corpus"
    # One process, one job: the machine is shared.
    # shellcheck disable=SC2086
    if ! nice -n "$nice_level" cargo +nightly fuzz run "$t" "$corpus" -- "${args[@]}" ${FUZZ_ARGS:-} \
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
