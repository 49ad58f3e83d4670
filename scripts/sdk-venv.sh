#!/usr/bin/env bash
# The official OpenAI and Anthropic Python SDKs, from PyPI, in a virtualenv under target/:
# the gateway's tests (gateway/tests/sdks.rs) call it through them. Prints the venv's python.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=target/sdk-venv
# The versions the tests were written against; a newer SDK is tested by raising them here.
wanted="openai==3.57.0 anthropic==2.14.0"
if [ ! -x "$venv/bin/python" ] || [ "$(cat "$venv/.wanted" 2>/dev/null)" != "$wanted" ]; then
    rm -rf "$venv"
    python3 -m venv "$venv" >&2
    # shellcheck disable=SC2086
    "$venv/bin/pip" install --quiet --disable-pip-version-check $wanted >&2
    echo "$wanted" > "$venv/.wanted"
fi
echo "$PWD/$venv/bin/python"
