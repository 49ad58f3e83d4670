#!/usr/bin/env bash
# pii-leak-benchmark (PyPI, a third-party check of privacy gateways) against the gateway, for
# both duties and both profiles: `gateway/examples/pii-restore.toml` (the `anonymizer`:
# placeholders upstream, the values back to the client) with `--duty restore`, and
# `gateway/examples/pii-anonymize.toml` (`regex-filter` with `pii` and `secrets`: one-way)
# with `--duty anonymize`; `pii-v1` (e-mail, SSN, card) and `pii-secrets-v1` (and AWS, GitHub,
# Slack credentials). Its capture server on 127.0.0.1:8765 is the upstream. Each run must say
# CLEAN (exit 0). The benchmark, pinned, is installed in a virtualenv under target/.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=target/pii-venv
wanted="pii-leak-benchmark==0.6.0 httpx==0.28.1"
if [ ! -x "$venv/bin/pii-leak-benchmark" ] || [ "$(cat "$venv/.wanted" 2>/dev/null)" != "$wanted" ]; then
    rm -rf "$venv"
    python3 -m venv "$venv"
    # shellcheck disable=SC2086
    "$venv/bin/pip" install --quiet --disable-pip-version-check $wanted
    echo "$wanted" > "$venv/.wanted"
fi
cargo build --quiet -p processors-gateway
port=18799
for duty in restore anonymize; do
    config="gateway/examples/pii-$duty.toml"
    out="target/pii-gateway-$duty.out"
    PII_UPSTREAM_KEY=unused target/debug/processors-gateway --config "$config" --listen "127.0.0.1:$port" > "$out" 2>&1 &
    pid=$!
    trap 'kill "$pid" 2> /dev/null || true' EXIT
    for _ in $(seq 50); do
        grep -q '^listening on' "$out" && break
        sleep 0.1
    done
    for profile in pii-v1 pii-secrets-v1; do
        report="target/pii-leak-$duty-$profile"
        echo "-- $config: --duty $duty --profile $profile"
        if ! (cd target && CONFORMANCE_TARGET_API_KEY=conformance-key "../$venv/bin/pii-leak-benchmark" selfcheck \
            --target-base-url "http://127.0.0.1:$port/v1" --duty "$duty" --profile "$profile" \
            --timeout-seconds 60 --json-out "../$report.json" > "../$report.out" 2>&1); then
            cat "$report.out"
            echo "pii-leak-benchmark: not CLEAN for $config, --duty $duty --profile $profile" >&2
            exit 1
        fi
        grep -m1 -E '^ *CLEAN' "$report.out"
    done
    kill -TERM "$pid"
    wait "$pid" || true
    trap - EXIT
done
echo "pii-leak-benchmark: CLEAN for both duties and both profiles"
