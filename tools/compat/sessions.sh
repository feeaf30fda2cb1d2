#!/usr/bin/env bash
# TLS sessions across processes with the BoringSSL backend (feature `boringssl-boring-crate`),
# checked on the wire. Against one quiche-server (BoringSSL, no Retry), three pairs of client
# processes, each pair a full handshake that saves its session to a file, then a second process
# that resumes it and sends its request as 0-RTT data:
#   ours:    quiche-client --session-file F, then quiche-client --session-file F --early-data
#            (HTTP/3);
#   0.30>us: tools/compat/api-check's quiche-session-client built on Cloudflare quiche 0.30.0
#            (crates.io) saves the session, our quiche-client resumes it (HTTP/0.9);
#   us>0.30: our quiche-client saves it, quiche 0.30.0's client resumes it (HTTP/0.9).
# Each resumption must report the session resumed and its 0-RTT accepted, the response must be
# the file served, and a capture of each pair (dumpcap on lo, decrypted by tshark with the
# server's key log; tools/interop/wirecheck.py's zerortt check) must show two handshakes, one
# Certificate message (none on resumption) and 0-RTT packets from the client.
#
# Builds quiche-client and quiche-server with the feature, unoptimized, in target/debug, and
# quiche 0.30.0 in target/api-check/upstream (shared with tools/compat/api-check.sh, which
# keeps it), both on the BoringSSL of tools/boringssl/build.sh. Needs dumpcap and tshark
# (tools/test.sh installs them). Every process runs under `timeout`. Exit status 0 when every
# check passes. (With the feature off, quiche-client refuses --session-file with exit status 2
# and the reason: apps/src/args.rs tests that.)
set -euo pipefail
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
cd "$REPO"
say() { echo "sessions: $*"; }
fail() {
    echo "sessions: FAIL: $*" >&2
    exit 1
}
start=$SECONDS
WORK="$(mktemp -d "${TMPDIR:-/tmp}/quiche-sessions.XXXXXX")"
cleanup_dir "$WORK"
for tool in dumpcap tshark python3; do
    command -v "$tool" >/dev/null || fail "$tool is missing (tools/test.sh installs tshark)"
done

eval "$(tools/boringssl/build.sh --env)"
say "building quiche-client and quiche-server with boringssl-boring-crate (unoptimized)"
cargo build --quiet -p quiche-apps --features boringssl-boring-crate
# Copied at once: a later default build of the apps puts its own binaries at these paths.
cp "$TARGET/debug/quiche-client" "$TARGET/debug/quiche-server" "$WORK/"
say "building quiche-session-client on quiche 0.30.0"
# RUSTC_BOOTSTRAP=1 and this target directory as in tools/compat/api-check.sh: one build of
# quiche 0.30.0 serves both scripts.
RUSTC_BOOTSTRAP=1 cargo build --quiet --manifest-path tools/compat/api-check/Cargo.toml \
    --features upstream --bin quiche-session-client --target-dir "$REPO/target/api-check/upstream"
UPSTREAM="$REPO/target/api-check/upstream/debug/quiche-session-client"
built=$SECONDS

mkdir -p "$WORK/root"
head -c 3000 /dev/urandom >"$WORK/root/file.bin"
want="$(sha256sum <"$WORK/root/file.bin" | cut -d' ' -f1)"
CERTS=quiche/tests/certs
SSLKEYLOGFILE="$WORK/server.keys" start_server "$WORK/server.log" \
    timeout 300 "$WORK/quiche-server" --listen 127.0.0.1:0 --cert "$CERTS/cert.crt" \
    --key "$CERTS/cert.key" --root "$WORK/root" --retry never ||
    fail "quiche-server did not start"
PORT="$SERVER_PORT"
URL="https://127.0.0.1:$PORT/file.bin"

# ours NAME SESSION_FILE ARGS...: our quiche-client fetches the file; its stderr in NAME.log.
ours() {
    local name="$1" file="$2"
    shift 2
    local rc=0
    rm -rf "$WORK/out"
    timeout 30 "$WORK/quiche-client" --no-verify --dump-responses "$WORK/out" \
        --session-file "$file" "$@" "$URL" >"$WORK/$name.out" 2>"$WORK/$name.log" || rc=$?
    [ "$rc" = 0 ] || fail "$name: quiche-client exited with $rc: $(tail -n 5 "$WORK/$name.log")"
    [ "$(sha256sum <"$WORK/out/file.bin" | cut -d' ' -f1)" = "$want" ] ||
        fail "$name: the response is not the file served"
    [ -s "$file" ] || fail "$name: no session saved in $file"
}

# upstream NAME SESSION_FILE [--early-data]: quiche 0.30.0's client; its report in NAME.out.
upstream() {
    local name="$1" file="$2"
    shift 2
    local rc=0
    timeout 30 "$UPSTREAM" "127.0.0.1:$PORT" /file.bin "$file" "$@" \
        >"$WORK/$name.out" 2>"$WORK/$name.log" || rc=$?
    [ "$rc" = 0 ] ||
        fail "$name: quiche 0.30's client exited with $rc: $(tail -n 5 "$WORK/$name.log")"
    grep -qx 'bytes: 3000' "$WORK/$name.out" ||
        fail "$name: quiche 0.30's client got $(grep bytes "$WORK/$name.out") (3000 served)"
    grep -qx 'session_saved: true' "$WORK/$name.out" || fail "$name: no session saved"
}

# expect NAME TEXT: NAME's output (stdout and stderr) has the line TEXT.
expect() {
    grep -qxF "$2" "$WORK/$1.out" "$WORK/$1.log" ||
        fail "$1: no line '$2' in its output: $(cat "$WORK/$1.out" "$WORK/$1.log" | tail -n 8)"
}

RESUMED_0RTT="session file: resumed: true, 0-RTT requests: true, 0-RTT accepted: true"

# begin_pair NAME ... end_pair NAME: the capture of one pair of clients, checked: two
# handshakes, one Certificate message, 0-RTT packets.
begin_pair() {
    start_capture "$PORT" "$WORK/$1.pcapng" "$WORK/$1.dumpcap.log" || fail "$1: dumpcap did not start"
}
end_pair() {
    stop_capture
    python3 tools/interop/wirecheck.py --pcap "$WORK/$1.pcapng" --keylog "$WORK/server.keys" \
        --port "$PORT" --case zerortt >"$WORK/$1.wire" 2>&1 ||
        fail "$1: on the wire: $(cat "$WORK/$1.wire")"
    say "pass: $1: $(head -n 1 "$WORK/$1.wire" |
        grep -o 'handshakes=[0-9]*\|zero_rtt_pkts=[0-9]*\|certificates=[0-9]*' | tr '\n' ' ')"
}

say "ours -> ours (HTTP/3)"
begin_pair ours
ours ours-1 "$WORK/ours.session"
grep -q 'session file:' "$WORK/ours-1.log" && fail "ours-1: resumed from a file that did not exist"
ours ours-2 "$WORK/ours.session" --early-data
expect ours-2 "$RESUMED_0RTT"
end_pair ours

say "quiche 0.30 -> ours (HTTP/0.9)"
begin_pair from-0.30
upstream from-0.30-1 "$WORK/from-0.30.session"
expect from-0.30-1 "resumed: false"
ours from-0.30-2 "$WORK/from-0.30.session" --http09 --early-data
expect from-0.30-2 "$RESUMED_0RTT"
end_pair from-0.30

say "ours -> quiche 0.30 (HTTP/0.9)"
begin_pair to-0.30
ours to-0.30-1 "$WORK/to-0.30.session" --http09
upstream to-0.30-2 "$WORK/to-0.30.session" --early-data
expect to-0.30-2 "resumed: true"
expect to-0.30-2 "early_data_request: true"
# quiche's early_data_reason: 2 is BoringSSL's ssl_early_data_accepted.
expect to-0.30-2 "early_data_reason: 2"
end_pair to-0.30

stop_pid "$SERVER_PID"
SERVER_PID=""
say "all passed: builds $((built - start)) s, checks $((SECONDS - built)) s"
