#!/usr/bin/env bash
# Where the CPU goes in one bulk transfer: the inputs of the per-packet cost table in
# tools/bench/README.md, made the same way each time so that a "before" and an "after" compare.
#
# One file of SIZE random bytes; quiche-server -> quiche-client over 127.0.0.1, hq-interop
# (--http09), every option at its default; each measurement a fresh server and client:
#  1. `perf stat` of both processes (attached to the server once it listens, the client from
#     its start): task-clock, context switches, page faults, system calls by kind, and
#     instructions and cycles where the machine has hardware counters (a VM often does not:
#     then they print "<not supported>" and task-clock is the measure);
#  2. `perf record --call-graph dwarf` of both processes (cpu-clock samples at FREQ Hz), then
#     tools/bench/perf_categories.py sorts every sample into a cost category (AEAD, header
#     protection, system calls, copies, frame building, ACKs, ...) by the innermost frame of its
#     call chain that a rule names, and prints per category the share of the process's samples
#     and nanoseconds per packet (task-clock of run 1 / packets the server sent);
#  3. optionally (--callgrind-size N, off by default: 50x slower) instruction counts of the
#     library alone, both sides in one process with no sockets: quiche's transfer_bench
#     example under `valgrind --tool=callgrind`, then tools/bench/callgrind_table.py prints the
#     instructions per data packet of the main functions (inclusive). Deterministic, unlike
#     the samples: the figure to compare before and after a change to the library.
# Every transfer is checked (exit status, byte count, SHA-256).
#
#   tools/bench/profile.sh                         # 1 GiB, results in a new directory
#   tools/bench/profile.sh --size 256M --out /tmp/prof --no-build
#   tools/bench/profile.sh --callgrind-size 32     # also the callgrind part, 32 MiB
#
# Options:
#   --size N            bytes per transfer, K/M/G suffix = powers of 1024 (default 1G)
#   --freq HZ           perf record's sampling frequency (default 4000)
#   --out DIR           where perf.data files, reports and the tables go (default: a new
#                       directory under ${TMPDIR:-/tmp}); kept at the end
#   --dir DIR           work directory for the file served and downloaded (default: OUT/work)
#   --timeout S         seconds one transfer may take (default 600)
#   --callgrind-size M  MiB for part 3 (default 0: skipped)
#   --no-build          use the binaries already built (target/release)
# Needs perf and, for part 3, valgrind (installed with apt-get when missing: Debian's
# linux-perf and valgrind); perf needs kernel.perf_event_paranoid <= 1 or root.
set -euo pipefail
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
cd "$REPO"

SIZE_ARG=1G
FREQ=4000
OUT=""
WORK=""
TIMEOUT=600
CG_MIB=0
BUILD=1
while [ $# -gt 0 ]; do
    case "$1" in
        --size) SIZE_ARG="$2"; shift 2 ;;
        --freq) FREQ="$2"; shift 2 ;;
        --out) OUT="$2"; shift 2 ;;
        --dir) WORK="$2"; shift 2 ;;
        --timeout) TIMEOUT="$2"; shift 2 ;;
        --callgrind-size) CG_MIB="$2"; shift 2 ;;
        --no-build) BUILD=0; shift ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "profile.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done

die() { echo "profile.sh: $*" >&2; exit 1; }
step() { printf '\n== %s\n' "$*"; }

SIZE="$(size_bytes "$SIZE_ARG")" || die "bad size $SIZE_ARG"
[ "$SIZE" -gt 0 ] || die "the size must be positive"
[[ "$FREQ" =~ ^[1-9][0-9]*$ ]] || die "bad frequency $FREQ"
[[ "$CG_MIB" =~ ^[0-9]+$ ]] || die "bad callgrind size $CG_MIB"

# perf and valgrind come from Debian's packages, installed here when missing.
missing=()
command -v perf >/dev/null || missing+=(linux-perf)
[ "$CG_MIB" = 0 ] || command -v valgrind >/dev/null || missing+=(valgrind)
if [ "${#missing[@]}" -gt 0 ]; then
    step "installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    if ! { apt-get update -qq && apt-get install -y -qq "${missing[@]}" >/dev/null; }; then
        die "could not install ${missing[*]}"
    fi
fi
for tool in perf python3 sha256sum timeout; do
    command -v "$tool" >/dev/null || die "$tool is missing"
done
perf stat -e task-clock true >/dev/null 2>&1 \
    || die "perf cannot count here (kernel.perf_event_paranoid is $(cat /proc/sys/kernel/perf_event_paranoid))"

SERVER_BIN="$TARGET/release/quiche-server"
CLIENT_BIN="$TARGET/release/quiche-client"
CERTS="$REPO/quiche/tests/certs"
CATEGORIES="$REPO/tools/bench/perf_categories.py"

if [ "$BUILD" = 1 ]; then
    # The release profile keeps line tables (debug = 1): perf unwinds with DWARF and names
    # inlined functions.
    step "building quiche-server and quiche-client (release)"
    build_apps
fi
for bin in "$SERVER_BIN" "$CLIENT_BIN"; do
    [ -x "$bin" ] || die "$bin is missing: run without --no-build"
done

[ -n "$OUT" ] || OUT="$(mktemp -d "${TMPDIR:-/tmp}/quiche-profile.XXXXXX")"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
[ -n "$WORK" ] || WORK="$OUT/work"
mkdir -p "$WORK/root" "$WORK/out"

SERVER_PID=""
PERF_PID=""
# shellcheck disable=SC2016 # expanded at exit
at_exit 'rm -f "$WORK/root/bench.bin" "$WORK/out/bench.bin"; echo "results in $OUT"'

# Starts quiche-server (logging its connection summary, packets sent, into $1.log); sets
# SERVER_PID and PORT.
start_quiche_server() {
    RUST_LOG=quiche_apps::server=info start_server "$1.log" "$SERVER_BIN" --listen 127.0.0.1:0 \
        --cert "$CERTS/cert.crt" --key "$CERTS/cert.key" --root "$WORK/root" --no-retry \
        || die "the server failed to start"
    PORT="$SERVER_PORT"
}

# Ends perf (attached to the server) with SIGINT, which makes it write its output; reaps it.
stop_perf() {
    kill -INT "$PERF_PID" 2>/dev/null || true
    wait "$PERF_PID" 2>/dev/null || true
    forget_pid "$PERF_PID"
    PERF_PID=""
}

# Ends the attached perf of the server, then the server; checks the download.
finish() {
    local name="$1" status="$2"
    # The client closed the connection; the server drains it for three PTOs (milliseconds
    # here) and logs its summary.
    sleep 0.5
    stop_perf
    stop_pid "$SERVER_PID"
    SERVER_PID=""
    [ "$status" = 0 ] || { cat "$OUT/$name-client.err" >&2; die "$name: the client failed (status $status)"; }
    local got
    got="$(sha256sum "$WORK/out/bench.bin" | awk '{ print $1 }')"
    [ "$got" = "$WANT_SHA" ] || die "$name: the downloaded file differs"
    rm -f "$WORK/out/bench.bin"
}

# The client's command line for a download from $PORT.
client_cmd() {
    echo "$CLIENT_BIN" --http09 --ca "$CERTS/rootca.crt" --dump-responses "$WORK/out" \
        "https://127.0.0.1:$PORT/bench.bin"
}

step "generating $SIZE bytes of random data (load $(cut -d' ' -f1-3 /proc/loadavg))"
head -c "$SIZE" /dev/urandom >"$WORK/root/bench.bin"
WANT_SHA="$(sha256sum "$WORK/root/bench.bin" | awk '{ print $1 }')"

# Warm-up: the first transfer after writing the file pays for the page cache's reclaim.
step "warm-up transfer (not measured)"
start_quiche_server "$OUT/warmup-server"
status=0
# shellcheck disable=SC2046 # the command line is words
timeout -k 5 "$TIMEOUT" $(client_cmd) >"$OUT/warmup-client.out" 2>"$OUT/warmup-client.err" || status=$?
sleep 0.2
stop_pid "$SERVER_PID"
SERVER_PID=""
[ "$status" = 0 ] || { cat "$OUT/warmup-client.err" >&2; die "warm-up: the client failed"; }
rm -f "$WORK/out/bench.bin"

# ---------------------------------------------------------------- 1. perf stat

# Software events every kernel has, the system calls of the UDP and event-loop paths, and the
# hardware counters where there are any.
EVENTS="task-clock,context-switches,cpu-migrations,page-faults,raw_syscalls:sys_enter"
for sc in sendmsg sendmmsg sendto recvmsg recvmmsg recvfrom epoll_wait read write pread64 \
    setsockopt; do
    EVENTS="$EVENTS,syscalls:sys_enter_$sc"
done
EVENTS="$EVENTS,instructions,cycles"

step "1. perf stat of both sides, one transfer (load $(cut -d' ' -f1-3 /proc/loadavg))"
start_quiche_server "$OUT/stat-server"
perf stat -x '	' -e "$EVENTS" -p "$SERVER_PID" -o "$OUT/server.stat" &
PERF_PID=$!
cleanup_pid "$PERF_PID"
sleep 0.3
status=0
# shellcheck disable=SC2046 # the command line is words
timeout -k 5 "$TIMEOUT" perf stat -x '	' -e "$EVENTS" -o "$OUT/client.stat" -- $(client_cmd) \
    >"$OUT/stat-client.out" 2>"$OUT/stat-client.err" || status=$?
finish stat "$status"
PACKETS="$(sed -n 's/.* \([0-9][0-9]*\) packets sent, .*/\1/p' "$OUT/stat-server.log" | tail -n 1)"
[ -n "$PACKETS" ] || die "no 'packets sent' in the server's log ($OUT/stat-server.log)"
grep '^bytes=' "$OUT/stat-client.out" | tail -n 1 | sed 's/^/client: /'
echo "server: $PACKETS packets sent"

# Prints the counters of stat file $1 per GiB and per packet.
per_unit() {
    awk -F'\t' -v size="$SIZE" -v packets="$PACKETS" '
/^#/ || NF < 3 { next }
{
    v = $1; unit = $2; ev = $3
    gib = size / 1073741824
    if (v ~ /not/) { printf "  %-34s %s\n", ev, v; next }
    if (ev == "task-clock") {
        printf "  %-34s %12.3f s  %10.3f s/GiB  %10.1f ns/packet\n", ev, v / 1000, v / 1000 / gib, v * 1e6 / packets
    } else {
        printf "  %-34s %12d    %10.1f /GiB    %10.4f /packet\n", ev, v, v / gib, v / packets
    }
}' "$1"
}
for side in server client; do
    echo "$side (per GiB: of the body; per packet: of the $PACKETS the server sent)"
    per_unit "$OUT/$side.stat" | tee "$OUT/$side.stat.txt"
done

# ---------------------------------------------------------------- 2. perf record

step "2. perf record --call-graph dwarf of both sides at $FREQ Hz, one transfer (load $(cut -d' ' -f1-3 /proc/loadavg))"
start_quiche_server "$OUT/record-server"
perf record -q -F "$FREQ" -e cpu-clock --call-graph dwarf,16384 -p "$SERVER_PID" \
    -o "$OUT/server.data" 2>"$OUT/server.record.err" &
PERF_PID=$!
cleanup_pid "$PERF_PID"
sleep 0.3
status=0
# shellcheck disable=SC2046 # the command line is words
timeout -k 5 "$TIMEOUT" perf record -q -F "$FREQ" -e cpu-clock --call-graph dwarf,16384 \
    -o "$OUT/client.data" -- $(client_cmd) >"$OUT/record-client.out" \
    2>"$OUT/record-client.err" || status=$?
finish record "$status"
grep '^bytes=' "$OUT/record-client.out" | tail -n 1 | sed 's/^/client: /'

for side in server client; do
    ms="$(awk -F'\t' '$3 == "task-clock" { print $1 }' "$OUT/$side.stat")"
    echo
    echo "$side: cost categories (task-clock of run 1: $ms ms over $PACKETS packets)"
    perf script -i "$OUT/$side.data" -F comm,tid,period,ip,sym,dso --no-inline 2>/dev/null \
        >"$OUT/$side.script"
    python3 "$CATEGORIES" --task-clock-ms "$ms" --packets "$PACKETS" --top 25 \
        <"$OUT/$side.script" | tee "$OUT/$side.categories.txt"
done

# ---------------------------------------------------------------- 3. callgrind (optional)

if [ "$CG_MIB" -gt 0 ]; then
    step "3. instructions per packet of the library alone: transfer_bench $CG_MIB MiB under callgrind"
    cargo build --release --quiet -p quiche --example transfer_bench
    bench="$REPO/target/release/examples/transfer_bench"
    timeout -k 5 "$TIMEOUT" valgrind --tool=callgrind --callgrind-out-file="$OUT/callgrind.out" \
        "$bench" "$CG_MIB" >"$OUT/callgrind.stdout" 2>"$OUT/callgrind.err" \
        || { tail -n 20 "$OUT/callgrind.err" >&2; die "callgrind run failed"; }
    cat "$OUT/callgrind.stdout"
    # Whole files first: `| head` would end callgrind_annotate with SIGPIPE (pipefail).
    callgrind_annotate --inclusive=yes "$OUT/callgrind.out" >"$OUT/callgrind.inclusive.txt" 2>&1
    callgrind_annotate "$OUT/callgrind.out" >"$OUT/callgrind.self.txt" 2>&1
    cg_packets="$(sed -n 's/.*per server packet (\([0-9]*\) packets).*/\1/p' "$OUT/callgrind.stdout" | head -n 1)"
    [ -n "$cg_packets" ] || die "no packet count in transfer_bench's output ($OUT/callgrind.stdout)"
    python3 "$REPO/tools/bench/callgrind_table.py" --packets "$cg_packets" \
        <"$OUT/callgrind.inclusive.txt" | tee "$OUT/callgrind.table.txt"
    echo "(callgrind_annotate's tables: $OUT/callgrind.inclusive.txt, $OUT/callgrind.self.txt)"
fi
