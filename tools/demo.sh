#!/usr/bin/env bash
# The main job in one command: builds quiche-server and quiche-client (release), serves a
# 50 MiB file of random data on 127.0.0.1, downloads it over QUIC, checks its SHA-256 and
# prints the client's summary line (bytes, seconds, Mbit/s, handshake time).
#
#   ./tools/demo.sh            # 50 MiB
#   DEMO_MIB=200 ./tools/demo.sh
#
# Extra client options (e.g. --cc-algorithm reno) can follow: ./tools/demo.sh --disable-pacing
set -euo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"
cd "$REPO"

MIB="${DEMO_MIB:-50}"
# Seconds the download may take before the demo gives up.
DEADLINE="${DEMO_TIMEOUT:-120}"
# The server validates the client's address with a Retry first, as in production.
SERVER_ARGS=()

if ! command -v cargo >/dev/null 2>&1; then
    echo "cargo is missing: install Rust with rustup first" >&2
    exit 1
fi

echo "== building quiche-server and quiche-client (release)"
build_apps
BIN="$TARGET/release"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/quiche-demo.XXXXXX")"
cleanup_dir "$WORK"

mkdir -p "$WORK/root" "$WORK/out"
echo "== generating $MIB MiB of random data"
head -c "$((MIB * 1024 * 1024))" /dev/urandom >"$WORK/root/demo.bin"

echo "== starting quiche-server on 127.0.0.1"
# Port 0: a free port, which the server prints as `listening on ADDR`.
start_server "$WORK/server.log" "$BIN/quiche-server" --listen 127.0.0.1:0 \
    --cert quiche/tests/certs/cert.crt --key quiche/tests/certs/cert.key \
    --root "$WORK/root" ${SERVER_ARGS[@]+"${SERVER_ARGS[@]}"} || exit 1
URL="https://localhost:$SERVER_PORT/demo.bin"

echo "== downloading $URL with quiche-client"
status=0
timeout "$DEADLINE" "$BIN/quiche-client" --ca quiche/tests/certs/rootca.crt \
    --dump-responses "$WORK/out" "$@" "$URL" >"$WORK/client.out" || status=$?
if [ "$status" -ne 0 ]; then
    [ "$status" -eq 124 ] && echo "the download took over ${DEADLINE}s" >&2
    echo "quiche-client failed (status $status)" >&2
    cat "$WORK/client.out" >&2
    exit 1
fi

want="$(sha256sum <"$WORK/root/demo.bin" | cut -d' ' -f1)"
got="$(sha256sum <"$WORK/out/demo.bin" | cut -d' ' -f1)"
if [ "$want" != "$got" ]; then
    echo "SHA-256 mismatch: sent $want, received $got" >&2
    exit 1
fi
echo "== SHA-256 matches: $got"
cat "$WORK/client.out"
