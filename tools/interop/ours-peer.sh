#!/usr/bin/env bash
# Our apps behind the interop runner's common peer interface (see run.sh):
#   ours-peer.sh server --listen ADDR --cert F --key F --root DIR [--retry] [--keylog F]
#   ours-peer.sh client --ca F --out DIR --case NAME [--keylog F] URL...
set -euo pipefail
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
BIN="${OURS_BIN:-$TARGET/release}"
role="${1:-}"; shift || true
# run.sh sets INTEROP_NO_GSO when it captures the test: on loopback a GSO batch is captured as
# one oversized datagram, which tshark cannot split into its QUIC packets.
extra=()
[ -n "${INTEROP_NO_GSO:-}" ] && extra=(--disable-gso)
# OURS_ACK_FREQUENCY=1 offers the ACK frequency extension (draft-ietf-quic-ack-frequency);
# quinn offers it too, so with quinn it is used. Both sides log their ACK frame counters.
[ -n "${OURS_ACK_FREQUENCY:-}" ] && extra+=(--ack-frequency)
# quiche-server answers h3 and hq-interop on one port; quiche-client speaks h3 unless given
# --http09, which every case but http3 uses (the interop runner's cases are HTTP/0.9).
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
    # v2: move clients that offer QUIC v2 to it (compatible version negotiation, RFC 9368).
    [ "${TESTCASE:-}" = v2 ] && args+=(--compatible-versions "0x6b3343cf,1")
    exec "$BIN/quiche-server" ${extra[@]+"${extra[@]}"} "${args[@]}"
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
    # Every case but http3 is HTTP/0.9 (hq-interop).
    [ "$kase" = http3 ] || args+=(--http09)
    case "$kase" in
        # ecn: on by default (ECT(0) while validating, counts in ACK frames).
        # rebind-port and rebind-addr are plain transfers (run.sh tells the client
        # "transfer"; the client does not know that tools/relay rebinds it).
        handshake|transfer|multiplexing|retry|http3|ecn|rebind-port|rebind-addr) ;;
        # Active migration (RFC 9000 §9.2): halfway through, the client moves to a new local
        # socket on its own (we have no preferred_address to move to, see README.md).
        connectionmigration) args+=(--migrate) ;;
        resumption) args+=(--resume) ;;
        zerortt) args+=(--resume --early-data) ;;
        chacha20) args+=(--chacha20) ;;
        keyupdate) args+=(--key-update) ;;
        versionnegotiation) args+=(--version-negotiation) ;;
        # Start in v1, offer v2 in version_information, follow the server to it.
        v2) args+=(--compatible-versions "0x6b3343cf,1") ;;
        *) echo unsupported; exit 127 ;;
    esac
    exec "$BIN/quiche-client" ${extra[@]+"${extra[@]}"} "${args[@]}" "${urls[@]}"
    ;;
*)
    echo "usage: ours-peer.sh server|client ..." >&2
    exit 2
    ;;
esac
