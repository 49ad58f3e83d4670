#!/usr/bin/env bash
# numpy, scipy, scikit-learn and PyYAML from PyPI, in a virtualenv under target/, for
# scripts/train_guards.py (which rebuilds builtins/data/injection.lgm and toxicity.lgm, the
# held-out corpora under eval/heldout/ and the vectors the Rust tests compare with).
# Prints the path of its `python`.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=target/guards-venv
wanted="numpy==2.4.6 scipy==1.17.1 scikit-learn==1.9.1 PyYAML==6.0.4"
if [ ! -x "$venv/bin/python" ] || [ "$(cat "$venv/.wanted" 2>/dev/null)" != "$wanted" ]; then
    rm -rf "$venv"
    python3 -m venv "$venv" >&2
    # shellcheck disable=SC2086
    "$venv/bin/pip" install --quiet --disable-pip-version-check $wanted >&2
    echo "$wanted" > "$venv/.wanted"
fi
echo "$PWD/$venv/bin/python"
