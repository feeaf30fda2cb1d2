#!/usr/bin/env bash
# A real browser against an HTTP/3 server: headless Chromium loads a page of 100 subresources
# (images and scripts of known sizes) from the server over QUIC only, and the page reports from
# its Performance API how each arrived. See README.md in this folder.
#
#   chromium-h3.sh [--server CMD] [--port PORT] [--resources N] [--timeout SECS] [--keep]
#
# --server CMD: the HTTP/3 server to test (default: aioquic, through tools/interop's
#   aioquic_peer.py). CMD is a command line; if it holds {port}, {root}, {cert} and {key}, those
#   are replaced, else the interop peers' interface is appended:
#     CMD server --listen 127.0.0.1:PORT --cert CERT --key KEY --root DIR
#   e.g. --server tools/interop/ngtcp2-peer.sh, --server tools/interop/ours-peer.sh, or
#   --server 'target/release/quiche-server --listen 127.0.0.1:{port} --cert {cert} --key {key} --root {root}'
# --timeout: time limit of the browser run (default 120 s); the server gets 30 s more.
# Checks, for the page and each resource: nextHopProtocol "h3", the expected encoded and
# decoded body size, status 200; every script ran. Nothing listens on TCP, so nothing can fall
# back to HTTP/2 or HTTP/1.1. Last line: "chromium-h3: N passed, N failed" (N = resources + 1
# for the page itself). Exit status 0 only if nothing failed. Installs Debian's chromium when it
# is missing (as root).
set -uo pipefail
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"

HERE="$REPO/tools/browser"
CERTS="$REPO/quiche/tests/certs"
INTEROP="$REPO/tools/interop"

server_cmd=""
port=""
resources=100
limit=120
keep=0
usage() { sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }
while [ $# -gt 0 ]; do
    case "$1" in
        --server) server_cmd="$2"; shift 2 ;;
        --port) port="$2"; shift 2 ;;
        --resources) resources="$2"; shift 2 ;;
        --timeout) limit="$2"; shift 2 ;;
        --keep) keep=1; shift ;;
        -h|--help) usage 0 ;;
        *) echo "chromium-h3: unknown argument $1" >&2; usage 2 ;;
    esac
done

say() { echo "chromium-h3: $*"; }
die() { say "$*" >&2; echo "chromium-h3: 0 passed, 1 failed"; exit 1; }

# ---- the browser (Debian's package; never a browser download of a test tool)
if ! command -v chromium >/dev/null; then
    say "installing Debian's chromium"
    if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
        die "chromium is missing (apt-get install chromium, as root)"
    fi
    export DEBIAN_FRONTEND=noninteractive
    { apt-get update -qq && apt-get install -y -qq chromium >/dev/null; } || die "apt-get install chromium failed"
fi
command -v openssl >/dev/null || die "openssl is missing"

# ---- the default server: aioquic's HTTP/3 through the interop peer
if [ -z "$server_cmd" ]; then
    if [ ! -x "$INTEROP/.build/venv/bin/python" ]; then
        "$INTEROP/setup.sh" >/dev/null || die "tools/interop/setup.sh failed"
    fi
    server_cmd="$INTEROP/.build/venv/bin/python $INTEROP/aioquic_peer.py"
fi

# A port with nothing on it over UDP or TCP (the browser must have no TCP to fall back to).
if [ -z "$port" ]; then
    port="$(free_port)" || die "no free port"
fi

WORK="$(mktemp -d /tmp/chromium-h3.XXXXXX)"
SERVER_PID=""
# shellcheck disable=SC2317 # run by the exit trap
remove_work() {
    if [ "$keep" = 1 ]; then say "kept $WORK"; else rm -rf "$WORK"; fi
}
at_exit remove_work

# ---- the page
python3 "$HERE/h3page.py" make "$WORK/www" "$WORK/expected.json" --resources "$resources" \
    || die "could not write the page"

# ---- the server
cert="$CERTS/cert.crt" key="$CERTS/cert.key"
if [[ "$server_cmd" == *"{port}"* ]]; then
    cmdline="${server_cmd//\{port\}/$port}"
    cmdline="${cmdline//\{root\}/$WORK/www}"
    cmdline="${cmdline//\{cert\}/$cert}"
    cmdline="${cmdline//\{key\}/$key}"
    read -r -a scmd <<<"$cmdline"
else
    read -r -a scmd <<<"$server_cmd"
    scmd+=(server --listen "127.0.0.1:$port" --cert "$cert" --key "$key" --root "$WORK/www")
fi
say "server: ${scmd[*]}"
TESTCASE=http3 timeout -k 2 $((limit + 30)) "${scmd[@]}" >"$WORK/server.log" 2>&1 &
SERVER_PID=$!
cleanup_pid "$SERVER_PID"
wait_port udp "$port" 10 "$SERVER_PID"
case $? in
    0) ;;
    2) cat "$WORK/server.log" >&2
       grep -qx unsupported "$WORK/server.log" && die "the server does not support HTTP/3 (it answered unsupported)"
       die "the server exited" ;;
    *) die "the server is not listening on UDP port $port" ;;
esac
if port_bound tcp "$port"; then
    die "something listens on TCP port $port: the browser could fall back to TCP"
fi

# ---- the browser
# SPKI pin of the test certificate: Chromium then accepts it without knowing its root.
spki="$(openssl x509 -in "$cert" -pubkey -noout | openssl pkey -pubin -outform der \
    | openssl dgst -sha256 -binary | base64)"
flags=(
    --headless=new --no-sandbox --disable-gpu --no-first-run
    --disable-background-networking --disable-component-update --disable-sync
    --user-data-dir="$WORK/profile"
    --enable-quic --origin-to-force-quic-on="localhost:$port"
    --ignore-certificate-errors-spki-list="$spki"
    --host-resolver-rules="MAP localhost 127.0.0.1"
    # Let the page's load event (and its handler) run before the DOM is dumped.
    --virtual-time-budget=$(( (limit - 5) * 1000 ))
    --dump-dom
)
url="https://localhost:$port/index.html"
say "chromium $(chromium --version 2>/dev/null | awk '{ print $2 }') loads $url"
t0=$(date +%s.%N)
timeout -k 5 "$limit" chromium "${flags[@]}" "$url" >"$WORK/dom.html" 2>"$WORK/chromium.log" &
BROWSER_PID=$!
cleanup_pid "$BROWSER_PID"
wait "$BROWSER_PID"; rc=$?
forget_pid "$BROWSER_PID"
t1=$(date +%s.%N)
secs="$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')"
say "browser run: ${secs}s (exit status $rc)"
stop_pid "$SERVER_PID"; SERVER_PID=""
if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
    say "the browser ran out of time (${limit}s)"
fi

python3 "$HERE/h3page.py" check "$WORK/dom.html" "$WORK/expected.json"
verdict=$?
if [ "$verdict" != 0 ]; then
    echo "--- server log (tail)" >&2; tail -n 20 "$WORK/server.log" >&2
    echo "--- chromium log (tail)" >&2; grep -v -i 'dbus\|bus.cc' "$WORK/chromium.log" | tail -n 20 >&2
    keep=1
fi
exit "$verdict"
