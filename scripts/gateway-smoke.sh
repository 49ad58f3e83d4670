#!/usr/bin/env bash
# The gateway as the README starts it: `cargo run -p processors-gateway` serves its embedded
# offline configuration and prints a development key; curl then gets a redacted answer through
# each protocol, a refusal, and a 401 without the key. The gateway stops on SIGTERM.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --quiet -p processors-gateway
out=target/gateway-smoke.out
port=${GATEWAY_SMOKE_PORT:-18787}
target/debug/processors-gateway --listen "127.0.0.1:$port" > "$out" 2>&1 &
pid=$!
trap 'kill "$pid" 2> /dev/null || true' EXIT
for _ in $(seq 50); do
    grep -q '^listening on' "$out" && break
    sleep 0.1
done
key=$(grep -o 'pgw-dev-[0-9a-f]*' "$out")
url="http://127.0.0.1:$port"
ask='{"model": "scripted", "messages": [{"role": "user", "content": "Who can help?"}]}'
curl -sS --fail-with-body "$url/v1/chat/completions" -H "Authorization: Bearer $key" -d "$ask" \
    | grep -q '"content":"Hello! Write to \[EMAIL\] with any question."'
curl -sSN --fail-with-body "$url/v1/chat/completions" -H "Authorization: Bearer $key" \
    -d '{"model": "scripted", "stream": true, "messages": [{"role": "user", "content": "hi"}]}' \
    > target/gateway-smoke.stream
tail -n 2 target/gateway-smoke.stream | grep -qx 'data: \[DONE\]'
curl -sS --fail-with-body "$url/v1/messages" -H "x-api-key: $key" \
    -d '{"model": "scripted", "max_tokens": 100, "messages": [{"role": "user", "content": "hi"}]}' \
    | grep -q '"text":"Hello! Write to \[EMAIL\] with any question."'
status=$(curl -s -o target/gateway-smoke.refusal -w '%{http_code}' "$url/v1/messages" -H "x-api-key: $key" \
    -d '{"model": "scripted", "max_tokens": 100, "messages": [{"role": "user", "content": "my key is sk-abcdefghijklmnopqrstuvwxyz0123456789"}]}')
[ "$status" = 400 ]
grep -q 'blocked by regex-filter' target/gateway-smoke.refusal
[ "$(curl -s -o /dev/null -w '%{http_code}' "$url/v1/chat/completions" -d "$ask")" = 401 ]
kill -TERM "$pid"
wait "$pid"
trap - EXIT
echo "gateway smoke test: ok"
