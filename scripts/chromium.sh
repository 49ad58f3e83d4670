#!/usr/bin/env bash
# Installs a headless browser for tests/integration/trace_page.rs (Debian's chromium), unless one is there.
set -euo pipefail
for b in chromium chromium-browser google-chrome; do
    if command -v "$b" >/dev/null 2>&1; then
        echo "browser: $(command -v "$b")"
        exit 0
    fi
done
if ! command -v apt-get >/dev/null 2>&1; then
    echo "no browser and no apt-get: install chromium, or set PROCESSORS_SKIP_BROWSER=1" >&2
    exit 1
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get install -y -q chromium >/dev/null 2>&1 || {
    $SUDO apt-get update -q >/dev/null
    $SUDO apt-get install -y -q chromium >/dev/null
}
echo "browser: $(command -v chromium)"
