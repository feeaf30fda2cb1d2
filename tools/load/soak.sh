#!/usr/bin/env bash
# The handshake soak: one quiche-server (release) and TOTAL handshakes against it from
# quiche-load, in rounds of ROUND connections (one request each, each connection closed as soon
# as its request is answered). After every round the server's resident memory (VmRSS) and its
# high-water mark (VmHWM) are read from /proc and printed as a table row, so that a server whose
# memory grows with the handshakes it has done shows it. Not part of CI: a million handshakes
# take half an hour or more on a 2-core machine.
#
# Usage: tools/load/soak.sh [TOTAL] [ROUND]   (defaults 1000000 and 20000)
# Environment: RETRY=0 runs the server with --no-retry (default: its default, Retry on);
# MAX_PENDING (default 256) handshakes in progress at once; SERVER_LOG=FILE keeps the server's
# stderr (RUST_LOG=info prints its counters).
set -euo pipefail
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
cd "$REPO"
total=${1:-1000000}
round=${2:-20000}
retry=${RETRY:-1}
max_pending=${MAX_PENDING:-256}
build_apps quiche-load
bin="$TARGET/release"

dir=$(mktemp -d)
cleanup_dir "$dir"
mkdir "$dir/root"
printf 'hello from the soak\n' > "$dir/root/index.html"
certs=quiche/tests/certs
flags=()
[ "$retry" = 0 ] && flags+=(--no-retry)
start_server "${SERVER_LOG:-$dir/server.log}" "$bin/quiche-server" --listen 127.0.0.1:0 \
    --cert "$certs/cert.crt" --key "$certs/cert.key" --root "$dir/root" ${flags[@]+"${flags[@]}"}
server_pid=$SERVER_PID
addr=$SERVER_ADDR

status() { sed -n "s/^$1:[[:space:]]*\([0-9]*\) kB/\1/p" "/proc/$server_pid/status"; }
cpu_s() {
    # utime + stime, fields 14 and 15 of /proc/PID/stat, in clock ticks.
    awk -v hz="$(getconf CLK_TCK)" '{ printf "%.1f", ($14 + $15) / hz }' "/proc/$server_pid/stat"
}

echo "server pid $server_pid on $addr, retry=$retry, $total handshakes in rounds of $round"
printf '| handshakes | server RSS KiB | server HWM KiB | server CPU s | round hs/s | failed |\n'
printf '|---:|---:|---:|---:|---:|---:|\n'
printf '| 0 | %s | %s | %s | | |\n' "$(status VmRSS)" "$(status VmHWM)" "$(cpu_s)"
done_hs=0
failed_total=0
start=$(date +%s)
while [ "$done_hs" -lt "$total" ]; do
    n=$((total - done_hs < round ? total - done_hs : round))
    line=$(timeout 900 "$bin/quiche-load" --server "$addr" -n "$n" -k 1 --no-hold \
        --max-pending "$max_pending" -q --timeout 600 || true)
    kv() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<< " $line"; }
    est=$(kv established)
    failed=$(kv failed_connections)
    done_hs=$((done_hs + ${est:-0}))
    failed_total=$((failed_total + ${failed:-$n}))
    # Let the server's closing connections drain (3 PTO) before reading its memory.
    sleep 1
    kill -0 "$server_pid" 2>/dev/null || { echo "the server died" >&2; exit 1; }
    printf '| %d | %s | %s | %s | %s | %s |\n' "$done_hs" "$(status VmRSS)" "$(status VmHWM)" \
        "$(cpu_s)" "$(kv handshakes_per_s)" "${failed:-?}"
    # A round that established nothing would loop for ever.
    [ "${est:-0}" -gt 0 ] || { echo "a round established nothing: $line" >&2; exit 1; }
done
echo "handshakes=$done_hs failed=$failed_total wall_s=$(($(date +%s) - start))"
[ "$failed_total" -eq 0 ]
