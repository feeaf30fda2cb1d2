#!/usr/bin/env bash
# Our apps behind the interop runner's common peer interface (see run.sh):
#   ours-peer.sh server --listen ADDR --cert F --key F --root DIR [--retry] [--keylog F]
#   ours-peer.sh client --ca F --out DIR --case NAME [--keylog F] URL...
set -euo pipefail
REPO="$(cd "$(dirname "$0")/../.." && pwd)"
BIN="${OURS_BIN:-$REPO/target/release}"
role="${1:-}"; shift || true
# run.sh sets INTEROP_NO_GSO when it captures the test: on loopback a GSO batch is captured as
# one oversized datagram, which tshark cannot split into its QUIC packets.
gso=()
[ -n "${INTEROP_NO_GSO:-}" ] && gso=(--disable-gso)
# HTTP/3 (the case http3): until our apps speak it, they say "ALPN hq-interop" only in their
# --help, and this wrapper answers "unsupported". Once a program's --help names h3, the case
# runs; the client then gets --http-version HTTP/3 if its --help lists that option (as quiche's
# does), nothing more otherwise. TESTCASE is the case, set by run.sh (and chromium-h3.sh).
speaks_h3() { "$1" --help 2>&1 | grep -qw h3; }
case "$role" in
server)
    args=(); retry=0
    while [ $# -gt 0 ]; do
        case "$1" in
            --retry) retry=1; shift ;;
            --keylog) export SSLKEYLOGFILE="$2"; shift 2 ;;
            *) args+=("$1"); shift ;;
        esac
    done
    # The runner asks for Retry only in the retry case; our server sends it by default.
    [ "$retry" = 1 ] || args+=(--no-retry)
    if [ "${TESTCASE:-}" = http3 ] && ! speaks_h3 "$BIN/quiche-server"; then
        echo unsupported; exit 127
    fi
    exec "$BIN/quiche-server" ${gso[@]+"${gso[@]}"} "${args[@]}"
    ;;
client)
    args=(); urls=(); kase=handshake
    while [ $# -gt 0 ]; do
        case "$1" in
            --ca) args+=(--ca "$2"); shift 2 ;;
            --no-verify) args+=(--no-verify); shift ;;
            --out) args+=(--dump-responses "$2"); shift 2 ;;
            --case) kase="$2"; shift 2 ;;
            --keylog) export SSLKEYLOGFILE="$2"; shift 2 ;;
            *) urls+=("$1"); shift ;;
        esac
    done
    case "$kase" in
        handshake|transfer|multiplexing|retry) ;;
        resumption) args+=(--resume) ;;
        zerortt) args+=(--resume --early-data) ;;
        chacha20) args+=(--chacha20) ;;
        keyupdate) args+=(--key-update) ;;
        versionnegotiation) args+=(--version-negotiation) ;;
        http3)
            speaks_h3 "$BIN/quiche-client" || { echo unsupported; exit 127; }
            if "$BIN/quiche-client" --help 2>&1 | grep -q -- --http-version; then
                args+=(--http-version HTTP/3)
            fi ;;
        *) echo unsupported; exit 127 ;;
    esac
    exec "$BIN/quiche-client" ${gso[@]+"${gso[@]}"} "${args[@]}" "${urls[@]}"
    ;;
*)
    echo "usage: ours-peer.sh server|client ..." >&2
    exit 2
    ;;
esac
