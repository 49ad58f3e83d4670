#!/usr/bin/env bash
# LiteLLM's proxy, from PyPI, in a virtualenv under target/: the gateway's bench runs it in
# front of the same upstream (`cargo run --release -p processors-gateway --example gateway_bench --
# --litellm "$(bash scripts/litellm-venv.sh)"`). Prints the path of its `litellm` command.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=target/litellm-venv
wanted="litellm[proxy]==${LITELLM_VERSION:-1.108.7}"
if [ ! -x "$venv/bin/python" ] || [ "$(cat "$venv/.wanted" 2>/dev/null)" != "$wanted" ]; then
    rm -rf "$venv"
    python3 -m venv "$venv" >&2
    "$venv/bin/pip" install --quiet --disable-pip-version-check "$wanted" >&2
    echo "$wanted" > "$venv/.wanted"
fi
echo "$PWD/$venv/bin/litellm"
