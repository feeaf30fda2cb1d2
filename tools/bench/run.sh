#!/usr/bin/env bash
# Bulk-transfer benchmark over loopback: our quiche-server -> quiche-client, and quinn's peer
# program from tools/interop (server -> client) on the same machine, in the same run,
# alternating, RUNS times each. Every transfer is checked intact (SHA-256 of the dumped file).
# Prints one row per transfer and a table of medians: goodput (the client's summary line),
# CPU time (user+sys) of each side, CPU seconds per GiB, and the ratios ours/quinn.
#
#   tools/bench/run.sh                      # 1 GiB, 3 runs each
#   tools/bench/run.sh --size 256M --runs 5
#   tools/bench/run.sh --no-build --dir /dev/shm/bench
#
# Options (or environment variables):
#   --size N     bytes per transfer, K/M/G suffix = powers of 1024 (BENCH_SIZE, default 1G)
#   --runs N     transfers per implementation (BENCH_RUNS, default 3)
#   --dir DIR    work directory for the file served and the file downloaded; needs twice the
#                size free (BENCH_DIR, default: a new directory under ${TMPDIR:-/tmp})
#   --timeout S  seconds one transfer may take (BENCH_TIMEOUT, default 600)
#   --no-build   use the binaries already built
#   --keep       keep the work directory (logs, results.tsv)
# See tools/bench/README.md for what is measured and how.
set -euo pipefail
REPO="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$REPO"

SIZE_ARG="${BENCH_SIZE:-1G}"
RUNS="${BENCH_RUNS:-3}"
DIR="${BENCH_DIR:-}"
TIMEOUT="${BENCH_TIMEOUT:-600}"
BUILD=1
KEEP=0
while [ $# -gt 0 ]; do
    case "$1" in
        --size) SIZE_ARG="$2"; shift 2 ;;
        --runs) RUNS="$2"; shift 2 ;;
        --dir) DIR="$2"; shift 2 ;;
        --timeout) TIMEOUT="$2"; shift 2 ;;
        --no-build) BUILD=0; shift ;;
        --keep) KEEP=1; shift ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "run.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done

die() { echo "run.sh: $*" >&2; exit 1; }
step() { printf '== %s\n' "$*"; }

size_bytes() {
    local v="$1" n mult=1
    case "$v" in
        *[kK]) n="${v%?}"; mult=1024 ;;
        *[mM]) n="${v%?}"; mult=$((1024 * 1024)) ;;
        *[gG]) n="${v%?}"; mult=$((1024 * 1024 * 1024)) ;;
        *) n="$v" ;;
    esac
    [[ "$n" =~ ^[0-9]+$ ]] || die "bad size $v"
    echo $((n * mult))
}
SIZE="$(size_bytes "$SIZE_ARG")"
[ "$SIZE" -gt 0 ] || die "the size must be positive"
[[ "$RUNS" =~ ^[1-9][0-9]*$ ]] || die "bad run count $RUNS"

for tool in /usr/bin/time sha256sum timeout awk df; do
    command -v "$tool" >/dev/null || die "$tool is missing (GNU time: apt-get install time)"
done
CLK_TCK="$(getconf CLK_TCK)"

OURS_SERVER="$REPO/target/release/quiche-server"
OURS_CLIENT="$REPO/target/release/quiche-client"
QUINN_DIR="$REPO/tools/interop/quinn-peer"
QUINN_BUILD="$REPO/tools/interop/.build"
QUINN="$QUINN_BUILD/bin/quinn-peer"
CERTS="$REPO/quiche/tests/certs"

if [ "$BUILD" = 1 ]; then
    step "building quiche-server and quiche-client (release)"
    cargo build --release --quiet -p quiche-apps
    # The same build as tools/interop/setup.sh's quinn step (crates.io, versions pinned with =).
    step "building quinn-peer (release)"
    cargo build --release --quiet --manifest-path "$QUINN_DIR/Cargo.toml" \
        --target-dir "$QUINN_BUILD/quinn-target"
    mkdir -p "$QUINN_BUILD/bin"
    install -m 0755 "$QUINN_BUILD/quinn-target/release/quinn-peer" "$QUINN"
fi
for bin in "$OURS_SERVER" "$OURS_CLIENT" "$QUINN"; do
    [ -x "$bin" ] || die "$bin is missing: run without --no-build"
done

if [ -z "$DIR" ]; then
    DIR="$(mktemp -d "${TMPDIR:-/tmp}/quiche-bench.XXXXXX")"
fi
mkdir -p "$DIR/root" "$DIR/out" "$DIR/logs"
SERVER_PID=""
cleanup() {
    if [ -n "$SERVER_PID" ]; then
        kill "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
    fi
    if [ "$KEEP" = 1 ]; then
        rm -f "$DIR/root/bench.bin" "$DIR/out/bench.bin"
        echo "logs and results in $DIR"
    else
        rm -rf "$DIR"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The file served and the file downloaded, plus some slack.
need_kib=$(((2 * SIZE + (64 << 20)) / 1024))
free_kib="$(df -Pk "$DIR" | awk 'NR == 2 { print $4 }')"
[ "$free_kib" -ge "$need_kib" ] || die "$DIR has $free_kib KiB free, the run needs $need_kib KiB"

step "generating $SIZE bytes of random data in $DIR"
head -c "$SIZE" /dev/urandom >"$DIR/root/bench.bin"
WANT_SHA="$(sha256sum "$DIR/root/bench.bin" | awk '{ print $1 }')"

# CPU seconds (user+sys, all threads) a live process has used so far, from /proc/PID/stat.
cpu_secs() {
    # Fields after "pid (comm) ": utime and stime are the 12th and 13th.
    sed 's/^.*) //' "/proc/$1/stat" | awk -v hz="$CLK_TCK" '{ printf "%.2f", ($12 + $13) / hz }'
}
hwm_kib() { awk '$1 == "VmHWM:" { print $2 }' "/proc/$1/status"; }

# Starts the server of implementation $1; sets SERVER_PID and PORT.
start_server() {
    local impl="$1" log="$2" port=""
    case "$impl" in
        ours)
            # --no-retry: quinn-peer's server does not send Retry either (one round trip less).
            "$OURS_SERVER" --listen 127.0.0.1:0 --cert "$CERTS/cert.crt" --key "$CERTS/cert.key" \
                --root "$DIR/root" --no-retry >"$log.out" 2>"$log.err" &
            ;;
        quinn)
            "$QUINN" server --listen 127.0.0.1:0 --cert "$CERTS/cert.crt" --key "$CERTS/cert.key" \
                --root "$DIR/root" >"$log.out" 2>"$log.err" &
            ;;
    esac
    SERVER_PID=$!
    # Both print the bound address (port 0: a free port): ours on stdout, quinn-peer on stderr.
    for _ in $(seq 100); do
        port="$(sed -n 's/^\(quinn: \)\{0,1\}listening on 127\.0\.0\.1:\([0-9]*\).*/\2/p' \
            "$log.out" "$log.err" | head -n 1)"
        [ -n "$port" ] && break
        kill -0 "$SERVER_PID" 2>/dev/null || { cat "$log.err" >&2; die "$impl server failed to start"; }
        sleep 0.1
    done
    [ -n "$port" ] || die "$impl server reported no address"
    PORT="$port"
}

stop_server() {
    kill "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=""
}

# One transfer with implementation $1, run $2: appends a row to results.tsv.
transfer() {
    local impl="$1" run="$2" log="$DIR/logs/$1-$2" url status
    start_server "$impl" "$log-server"
    url="https://127.0.0.1:$PORT/bench.bin"
    local client=()
    case "$impl" in
        ours) client=("$OURS_CLIENT" --ca "$CERTS/rootca.crt" --dump-responses "$DIR/out" "$url") ;;
        quinn) client=("$QUINN" client --ca "$CERTS/rootca.crt" --out "$DIR/out" --case transfer "$url") ;;
    esac
    status=0
    timeout -k 5 "$TIMEOUT" /usr/bin/time -o "$log-client.time" -f '%e %U %S %M' \
        "${client[@]}" >"$log-client.out" 2>"$log-client.err" || status=$?
    # The server's share ends with the connection: the client closed it, the server drains
    # for three PTOs (milliseconds on loopback), then idles in its event loop.
    sleep 0.5
    local server_cpu server_hwm
    server_cpu="$(cpu_secs "$SERVER_PID")"
    server_hwm="$(hwm_kib "$SERVER_PID")"
    stop_server
    if [ "$status" != 0 ]; then
        cat "$log-client.err" >&2
        die "$impl run $run: the client failed (status $status; 124 = over ${TIMEOUT}s)"
    fi
    local summary bytes mbps got
    summary="$(grep '^bytes=' "$log-client.out" | tail -n 1)"
    bytes="$(sed -n 's/.*bytes=\([0-9]*\).*/\1/p' <<<"$summary")"
    mbps="$(sed -n 's/.*mbps=\([0-9.]*\).*/\1/p' <<<"$summary")"
    [ "$bytes" = "$SIZE" ] || die "$impl run $run: $bytes bytes received, $SIZE expected ($summary)"
    got="$(sha256sum "$DIR/out/bench.bin" | awk '{ print $1 }')"
    [ "$got" = "$WANT_SHA" ] || die "$impl run $run: the downloaded file differs (SHA-256 $got)"
    rm -f "$DIR/out/bench.bin"
    local wall user sys rss client_cpu
    read -r wall user sys rss <"$log-client.time"
    client_cpu="$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.2f", u + s }')"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$impl" "$run" "$mbps" "$wall" "$client_cpu" \
        "$server_cpu" "$rss" "$server_hwm" >>"$DIR/results.tsv"
    printf '  %-5s run %s: %8s Mbit/s  %6ss  client CPU %6ss  server CPU %6ss  (SHA-256 ok)\n' \
        "$impl" "$run" "$mbps" "$wall" "$client_cpu" "$server_cpu"
}

step "$RUNS transfers of $SIZE bytes each over 127.0.0.1, alternating ($(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg))"
: >"$DIR/results.tsv"
for run in $(seq "$RUNS"); do
    # Who goes first alternates too, so that neither always follows the other's page cache
    # and CPU frequency state.
    if [ $((run % 2)) = 1 ]; then order="ours quinn"; else order="quinn ours"; fi
    for impl in $order; do
        transfer "$impl" "$run"
    done
done
echo "(load after: $(cut -d' ' -f1-3 /proc/loadavg))"

# Medians per implementation, CPU per GiB, and ours/quinn.
echo
awk -F'\t' -v size="$SIZE" -v runs="$RUNS" '
function median(impl, col,    n, i, j, t, v) {
    n = 0
    for (i = 1; i <= NR_; i++) if (row_impl[i] == impl) v[++n] = row[i, col] + 0
    for (i = 2; i <= n; i++) { t = v[i]; for (j = i - 1; j >= 1 && v[j] > t; j--) v[j + 1] = v[j]; v[j + 1] = t }
    return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
}
{ NR_ = NR; row_impl[NR] = $1; for (c = 3; c <= 8; c++) row[NR, c] = $c }
END {
    gib = size / 1073741824
    printf "median of %d runs, %.3f GiB per transfer\n", runs, gib
    printf "%-14s %10s %8s %11s %11s %13s %13s %11s %11s\n", "", "goodput", "wall", "client CPU", "server CPU", "client CPU", "server CPU", "client RSS", "server RSS"
    printf "%-14s %10s %8s %11s %11s %13s %13s %11s %11s\n", "", "Mbit/s", "s", "s", "s", "s/GiB", "s/GiB", "MiB", "MiB"
    for (k = 1; k <= 2; k++) {
        impl = k == 1 ? "ours" : "quinn"
        m[impl, 3] = median(impl, 3); m[impl, 4] = median(impl, 4)
        m[impl, 5] = median(impl, 5); m[impl, 6] = median(impl, 6)
        m[impl, 7] = median(impl, 7); m[impl, 8] = median(impl, 8)
        printf "%-14s %10.1f %8.2f %11.2f %11.2f %13.2f %13.2f %11.1f %11.1f\n", impl, m[impl, 3], m[impl, 4], m[impl, 5], m[impl, 6], m[impl, 5] / gib, m[impl, 6] / gib, m[impl, 7] / 1024, m[impl, 8] / 1024
    }
    r = "ours/quinn"
    printf "%-14s %10.2f %8.2f %11.2f %11.2f %13.2f %13.2f %11.2f %11.2f\n", r, m["ours", 3] / m["quinn", 3], m["ours", 4] / m["quinn", 4], m["ours", 5] / m["quinn", 5], m["ours", 6] / m["quinn", 6], m["ours", 5] / m["quinn", 5], m["ours", 6] / m["quinn", 6], m["ours", 7] / m["quinn", 7], m["ours", 8] / m["quinn", 8]
}' "$DIR/results.tsv"
