#!/usr/bin/env bash
# A CI-sized load smoke: quiche-server (with its default Retry) and quiche-load on loopback,
# N connections (default 200) of K requests each; fails unless every connection and request
# succeeds. Usage: tools/load/smoke.sh [N] [K] (uses the debug binaries; PROFILE=release for
# the release ones, which it builds).
set -euo pipefail
cd "$(dirname "$0")/../.."
n=${1:-200}
k=${2:-2}
profile=${PROFILE:-debug}
flag=()
[ "$profile" = release ] && flag=(--release)
cargo build -q "${flag[@]}" -p quiche-apps -p quiche-load

dir=$(mktemp -d)
server_pid=
cleanup() {
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true
    rm -rf "$dir"
}
trap cleanup EXIT
mkdir "$dir/root"
printf 'hello from the load smoke\n' > "$dir/root/index.html"
certs=quiche/tests/certs
"target/$profile/quiche-server" --listen 127.0.0.1:0 --cert "$certs/cert.crt" \
    --key "$certs/cert.key" --root "$dir/root" --idle-timeout 300000 \
    > "$dir/server.out" 2> "$dir/server.err" &
server_pid=$!
addr=
for _ in $(seq 100); do
    addr=$(sed -n 's/^listening on //p' "$dir/server.out")
    [ -n "$addr" ] && break
    sleep 0.1
done
[ -n "$addr" ] || { echo "the server did not start" >&2; cat "$dir/server.err" >&2; exit 1; }
timeout 300 "target/$profile/quiche-load" --server "$addr" -n "$n" -k "$k" -q \
    --timeout 240 --server-pid "$server_pid"
