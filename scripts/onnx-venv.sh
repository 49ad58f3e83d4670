#!/usr/bin/env bash
# numpy, onnx and onnxruntime from PyPI, in a virtualenv under target/, for
# scripts/onnx_classifier.py (which trains a model `OnnxClassifier` loads, and prints the
# scores the Rust tests compare with). Prints the path of its `python`.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=target/onnx-venv
wanted="numpy==2.1.3 onnx==1.17.0 onnxruntime==1.32.0"
if [ ! -x "$venv/bin/python" ] || [ "$(cat "$venv/.wanted" 2>/dev/null)" != "$wanted" ]; then
    rm -rf "$venv"
    python3 -m venv "$venv" >&2
    # shellcheck disable=SC2086
    "$venv/bin/pip" install --quiet --disable-pip-version-check $wanted >&2
    echo "$wanted" > "$venv/.wanted"
fi
echo "$PWD/$venv/bin/python"
