#!/usr/bin/env bash
# The benchmark, ours next to quinn, quic-go and the machine's ceiling in one run:
#  1. bulk transfer over loopback: quiche-server -> quiche-client over HTTP/3 (ours-h3) and over
#     HTTP/0.9 (ours-hq, hq-interop: the same bytes without HTTP/3 framing), HTTP/0.9 with
#     --disable-gso on both (ours-nogso), HTTP/0.9 with BBR on both (ours-bbr: --cc-algorithm bbr,
#     beside CUBIC, the default), quinn's peer program from tools/interop (server ->
#     client, HTTP/0.9), and the ceiling (../shared/ceiling: only the work a 1-RTT bulk
#     transfer cannot avoid, with the apps' datagram size; `ceiling` counts ACKs through
#     memory, `ceiling-udp` sends them as datagrams), alternating, RUNS times each; every
#     transfer checked intact (exit status, byte count, SHA-256). One row per transfer, then
#     medians: goodput, CPU seconds per GiB of each side, ratios ours-h3/ours-hq, ours/quinn and
#     ours/ceiling;
#  2. handshakes per second on one core (taskset -c 0), ours and quinn-proto alternating, three
#     runs each, medians and the ratio (tools/bench/handshakes, in memory, no sockets);
#  3. heap bytes held by one idle established connection, per side (same program);
#  4. HTTP/3 requests per second for 1 KiB responses on one connection, 100 in flight:
#     quiche-server next to quic-go's http3 server (tools/interop/quic-go-peer), both driven
#     by the same client (bench-rps, tools/load's client on our quiche::h3), alternating;
#     every response's status and length checked. Medians of req/s, latency percentiles,
#     server CPU per request.
# With --boringssl, our library on its BoringSSL backend too, beside rustls: transfers (ours-bssl)
# and handshakes/s (ours-bssl, ours-bssl-x25519), with their ratios to the default build.
# Each run appends one line of medians and ratios to tools/bench/history.tsv.
#
#   tools/bench/run.sh                      # 1 GiB, 3 runs each
#   tools/bench/run.sh --size 64M --runs 1  # a quick check
#   tools/bench/run.sh --no-build --dir /dev/shm/bench
#   tools/bench/run.sh --compare 5a4cac6 --runs 4   # that commit against the working tree
#
# Options (or environment variables):
#   --size N        bytes per transfer, K/M/G suffix = powers of 1024 (BENCH_SIZE, default 1G)
#   --runs N        transfers per variant (BENCH_RUNS, default 3)
#   --dir DIR       work directory for the file served and the file downloaded; needs twice the
#                   size free (BENCH_DIR, default: a new directory under ${TMPDIR:-/tmp})
#   --timeout S     seconds one transfer or requests/s measurement may take (BENCH_TIMEOUT,
#                   default 600)
#   --handshakes N  handshakes per measurement (BENCH_HANDSHAKES, default 2000; 0 skips 2 and 3)
#   --hs-runs N     measurements per implementation (BENCH_HS_RUNS, default 3)
#   --idle-conns K  idle connection pairs for the heap figure (BENCH_IDLE_CONNS, default 1000)
#   --rps-requests N  counted requests per requests/s measurement (BENCH_RPS_REQUESTS, default
#                   20000, after 1000 uncounted; 0 skips part 4)
#   --rps-runs N    requests/s measurements per server (BENCH_RPS_RUNS, default 3)
#   --rps-concurrency C  requests in flight (BENCH_RPS_CONCURRENCY, default 100)
#   --skip-rps      skip part 4 (the same as --rps-requests 0)
#   --skip-transfers  skip part 1
#   --skip-ceiling  no ceiling variants (and no ratios to it); without its sources (CEILING_DIR,
#                   else ../shared/ceiling beside the repository, else /work/shared/ceiling) the
#                   run says so and goes on without them
#   --compare REF   build our apps at commit REF in a worktree (tools/bench/.build/compare) and
#                   run its hq-interop transfers (ref-hq) alternating with the working tree's
#                   (ours-hq) and the ceiling: part 1 only, per-pair and median ratios
#   --ours-bin DIR  take quiche-server and quiche-client from DIR (another build) and do not
#                   build them (BENCH_OURS_BIN)
#   --history FILE  the file the run's line is appended to (BENCH_HISTORY, default
#                   tools/bench/history.tsv)
#   --no-history    append nothing
#   --no-build      use the binaries already built
#   --keep          keep the work directory (logs, results.tsv, handshakes.tsv, rps.tsv)
#   --boringssl     also our library on its BoringSSL backend (feature boringssl-boring-crate;
#                   BoringSSL from tools/boringssl/build.sh, the apps and bench-handshakes built
#                   in target/bench-boringssl): transfers ours-bssl (HTTP/0.9, as ours-hq) and
#                   handshakes ours-bssl (BoringSSL's default groups, X25519MLKEM768 first) and
#                   ours-bssl-x25519 (X25519 only, as rustls offers), with ratios to rustls's
#                   (BENCH_BORINGSSL=1)
# See tools/bench/README.md for what is measured and how.
set -euo pipefail
START_DIR="$PWD"
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
cd "$REPO"

SIZE_ARG="${BENCH_SIZE:-1G}"
RUNS="${BENCH_RUNS:-3}"
DIR="${BENCH_DIR:-}"
TIMEOUT="${BENCH_TIMEOUT:-600}"
HS_N="${BENCH_HANDSHAKES:-2000}"
HS_RUNS="${BENCH_HS_RUNS:-3}"
IDLE_K="${BENCH_IDLE_CONNS:-1000}"
OURS_BIN="${BENCH_OURS_BIN:-}"
RPS_N="${BENCH_RPS_REQUESTS:-20000}"
RPS_RUNS="${BENCH_RPS_RUNS:-3}"
RPS_C="${BENCH_RPS_CONCURRENCY:-100}"
HISTORY="${BENCH_HISTORY:-$REPO/tools/bench/history.tsv}"
COMPARE=""
CEILING_WANTED=1
TRANSFERS=1
BUILD=1
KEEP=0
BSSL="${BENCH_BORINGSSL:-0}"
while [ $# -gt 0 ]; do
    case "$1" in
        --size) SIZE_ARG="$2"; shift 2 ;;
        --runs) RUNS="$2"; shift 2 ;;
        --dir) DIR="$2"; shift 2 ;;
        --timeout) TIMEOUT="$2"; shift 2 ;;
        --handshakes) HS_N="$2"; shift 2 ;;
        --hs-runs) HS_RUNS="$2"; shift 2 ;;
        --idle-conns) IDLE_K="$2"; shift 2 ;;
        --skip-transfers) TRANSFERS=0; shift ;;
        --skip-ceiling) CEILING_WANTED=0; shift ;;
        --compare) COMPARE="$2"; shift 2 ;;
        --history) HISTORY="$2"; shift 2 ;;
        --no-history) HISTORY=""; shift ;;
        --rps-requests) RPS_N="$2"; shift 2 ;;
        --rps-runs) RPS_RUNS="$2"; shift 2 ;;
        --rps-concurrency) RPS_C="$2"; shift 2 ;;
        --skip-rps) RPS_N=0; shift ;;
        --ours-bin) OURS_BIN="$2"; shift 2 ;;
        --no-build) BUILD=0; shift ;;
        --keep) KEEP=1; shift ;;
        --boringssl) BSSL=1; shift ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "run.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done

die() { echo "run.sh: $*" >&2; exit 1; }
step() { printf '\n== %s\n' "$*"; }

# shellcheck source=tools/bench/sh/ceiling.sh
. "$REPO/tools/bench/sh/ceiling.sh"
# shellcheck source=tools/bench/sh/compare.sh
. "$REPO/tools/bench/sh/compare.sh"
# shellcheck source=tools/bench/sh/history.sh
. "$REPO/tools/bench/sh/history.sh"

if [ -n "$COMPARE" ]; then
    [ "$BSSL" = 0 ] || die "--compare and --boringssl do not go together"
    # An A/B of our apps: the other parts would measure the working tree alone.
    [ "$TRANSFERS" = 1 ] || die "--compare needs the transfers (no --skip-transfers)"
    HS_N=0
    RPS_N=0
fi

SIZE="$(size_bytes "$SIZE_ARG")" || die "bad size $SIZE_ARG"
[ "$SIZE" -gt 0 ] || die "the size must be positive"
[[ "$RUNS" =~ ^[1-9][0-9]*$ ]] || die "bad run count $RUNS"
[[ "$HS_N" =~ ^[0-9]+$ ]] || die "bad handshake count $HS_N"
[[ "$HS_RUNS" =~ ^[1-9][0-9]*$ ]] || die "bad handshake run count $HS_RUNS"
[[ "$IDLE_K" =~ ^[1-9][0-9]*$ ]] || die "bad idle connection count $IDLE_K"
[[ "$RPS_N" =~ ^[0-9]+$ ]] || die "bad request count $RPS_N"
[[ "$RPS_RUNS" =~ ^[1-9][0-9]*$ ]] || die "bad requests/s run count $RPS_RUNS"
[[ "$RPS_C" =~ ^[1-9][0-9]*$ ]] || die "bad concurrency $RPS_C"

for tool in /usr/bin/time sha256sum timeout awk df taskset git; do
    command -v "$tool" >/dev/null || die "$tool is missing (GNU time: apt-get install time; taskset: util-linux)"
done
CLK_TCK="$(getconf CLK_TCK)"

OURS_DIR="${OURS_BIN:-$TARGET/release}"
OURS_SERVER="$OURS_DIR/quiche-server"
OURS_CLIENT="$OURS_DIR/quiche-client"
QUINN="$INTEROP_BUILD/bin/quinn-peer"
HS_MANIFEST="$REPO/tools/bench/handshakes/Cargo.toml"
# The workspace's target directory: our quiche and the dependencies it shares with quinn-proto
# come from the release build of the apps when the settings match (as in tools/test.sh).
HS_TARGET="$TARGET"
HS="$HS_TARGET/release/bench-handshakes"
RPS="$TARGET/release/bench-rps"
QUICGO="$INTEROP_BUILD/bin/quic-go-peer"
# Part 4 without quic-go (no Go toolchain) still measures ours; this says why quic-go is missing.
QUICGO_SKIPPED=""
CERTS="$REPO/quiche/tests/certs"
# The BoringSSL builds (--boringssl): their own target directory, so that the default
# binaries in $TARGET/release stay the rustls ones whatever ran last.
BSSL_TARGET="$TARGET/bench-boringssl"
BSSL_DIR="$BSSL_TARGET/release"
HS_BSSL="$BSSL_DIR/bench-handshakes"

if [ "$BUILD" = 1 ]; then
    if [ -z "$OURS_BIN" ] && { [ "$TRANSFERS" = 1 ] || [ "$RPS_N" -gt 0 ]; }; then
        step "building quiche-server and quiche-client (release)"
        build_apps
    fi
    if [ "$RPS_N" -gt 0 ]; then
        # bench-rps (tools/load) is the client of part 4 whichever server build is measured.
        step "building bench-rps (release)"
        build_packages release quiche-load
    fi
    if [ "$TRANSFERS" = 1 ] && [ -z "$COMPARE" ]; then
        step "building quinn-peer (release)"
        build_peer quinn
    fi
    if [ "$HS_N" -gt 0 ]; then
        # Outside the workspace (it depends on quinn-proto), with its own target dir.
        step "building tools/bench/handshakes (release)"
        cargo build --release --quiet --manifest-path "$HS_MANIFEST" --target-dir "$HS_TARGET"
    fi
    if [ "$BSSL" = 1 ]; then
        step "building BoringSSL (once), then the apps and bench-handshakes on it (release, $BSSL_TARGET)"
        tools/boringssl/build.sh
        (
            eval "$(tools/boringssl/build.sh --env)"
            cargo build --release --quiet -p quiche-apps --features quiche/boringssl-boring-crate \
                --target-dir "$BSSL_TARGET"
            if [ "$HS_N" -gt 0 ]; then
                cargo build --release --quiet --manifest-path "$HS_MANIFEST" --features boringssl \
                    --target-dir "$BSSL_TARGET"
            fi
        ) || die "the BoringSSL builds failed"
    fi
    if [ "$RPS_N" -gt 0 ]; then
        if command -v go >/dev/null; then
            step "building quic-go-peer"
            build_peer quic-go
        elif [ ! -x "$QUICGO" ]; then
            QUICGO_SKIPPED="no Go toolchain to build tools/interop/quic-go-peer"
        fi
    fi
elif [ "$RPS_N" -gt 0 ] && [ ! -x "$QUICGO" ]; then
    QUICGO_SKIPPED="$QUICGO is missing (run without --no-build, or tools/interop/setup.sh)"
fi
if [ "$TRANSFERS" = 1 ]; then
    if [ "$CEILING_WANTED" = 0 ]; then
        CEILING_SKIPPED="--skip-ceiling"
    elif [ "$BUILD" = 1 ]; then
        ceiling_build
    elif [ ! -x "$CEILING" ]; then
        CEILING_SKIPPED="$CEILING is missing (run without --no-build)"
    fi
    if [ -n "$CEILING_SKIPPED" ]; then
        echo "ceiling: skipped ($CEILING_SKIPPED); no ratios to it in this run"
    fi
    if [ -n "$COMPARE" ]; then
        compare_build "$COMPARE"
    fi
fi
need=()
if [ "$TRANSFERS" = 1 ]; then
    need+=("$OURS_SERVER" "$OURS_CLIENT")
    [ -z "$COMPARE" ] && need+=("$QUINN")
fi
[ "$HS_N" -gt 0 ] && need+=("$HS")
if [ "$BSSL" = 1 ]; then
    [ "$TRANSFERS" = 1 ] && need+=("$BSSL_DIR/quiche-server" "$BSSL_DIR/quiche-client")
    [ "$HS_N" -gt 0 ] && need+=("$HS_BSSL")
fi
[ "$RPS_N" -gt 0 ] && need+=("$OURS_SERVER" "$RPS")
for bin in "${need[@]}"; do
    [ -x "$bin" ] || die "$bin is missing: run without --no-build"
done

# For the history line: the load when the measurements start, and the figures of parts 2-4.
LOAD_START="$(cut -d' ' -f1 /proc/loadavg)"
HS_MEDIAN_ours=""
HEAP_OURS=""
RPS_MEDIAN_ours=""

if [ -z "$DIR" ]; then
    DIR="$(mktemp -d "${TMPDIR:-/tmp}/quiche-bench.XXXXXX")"
fi
mkdir -p "$DIR/root" "$DIR/out" "$DIR/logs"
if [ "$KEEP" = 1 ]; then
    # shellcheck disable=SC2016 # expanded at exit
    at_exit 'rm -f "$DIR/root/bench.bin" "$DIR/out/bench.bin"; echo "logs and results in $DIR"'
else
    cleanup_dir "$DIR"
fi

# Median of the numbers on stdin, one per line.
median() {
    sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) exit 1; print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# ---------------------------------------------------------------- 1. bulk transfer

# CPU seconds (user+sys, all threads) a live process has used so far, from /proc/PID/stat.
cpu_secs() {
    # Fields after "pid (comm) ": utime and stime are the 12th and 13th.
    sed 's/^.*) //' "/proc/$1/stat" | awk -v hz="$CLK_TCK" '{ printf "%.2f", ($12 + $13) / hz }'
}
hwm_kib() { awk '$1 == "VmHWM:" { print $2 }' "/proc/$1/status"; }

# The extra flags of variant $1 for both of our programs.
ours_flags() {
    case "$1" in
        ours-nogso) echo "--disable-gso" ;;
        # The sender is the server; the client gets it too, as with the other flags.
        ours-bbr) echo "--cc-algorithm bbr" ;;
        *) echo "" ;;
    esac
}

# The client's application protocol of variant $1: HTTP/3 (quiche-client's default) or HTTP/0.9
# (hq-interop, as quinn's peer speaks: the same bytes with no framing). One server answers both.
ours_proto_flags() {
    case "$1" in
        ours-h3) echo "" ;;
        # Older clients spoke HTTP/0.9 only, without the flag.
        ref-hq)
            if "$REF_DIR/quiche-client" --help 2>&1 | grep -q -- --http09; then echo "--http09"; fi ;;
        *) echo "--http09" ;;
    esac
}

# The directory of the quiche-server and quiche-client of variant $1.
ours_dir() {
    case "$1" in
        ref-*) echo "$REF_DIR" ;;
        ours-bssl) echo "$BSSL_DIR" ;;
        *) echo "$OURS_DIR" ;;
    esac
}

# Starts the server of variant $1 with its output in $2; sets SERVER_PID and PORT. All print
# the bound address (port 0: a free port).
start_variant_server() {
    local variant="$1" log="$2" cmd=()
    case "$variant" in
        ours-h3|ours-hq|ours-nogso|ours-bbr|ours-bssl|ours|ref-hq)
            # --no-retry: quinn-peer's server does not send Retry either (one round trip less).
            # shellcheck disable=SC2207 # the flags are words
            cmd=("$(ours_dir "$variant")/quiche-server" --no-retry $(ours_flags "$variant")) ;;
        quinn) cmd=("$QUINN" server) ;;
        # No --retry: no Retry round trip, as ours with --no-retry.
        quic-go) cmd=("$QUICGO" server) ;;
    esac
    start_server "$log" "${cmd[@]}" --listen 127.0.0.1:0 --cert "$CERTS/cert.crt" \
        --key "$CERTS/cert.key" --root "$DIR/root" || die "$variant server failed to start"
    PORT="$SERVER_PORT"
}

# One transfer with variant $1, run $2: appends a row to results.tsv.
transfer() {
    local variant="$1" run="$2" log="$DIR/logs/$1-$2" url status
    case "$variant" in
        ceiling|ceiling-udp) ceiling_transfer "$variant" "$run"; return ;;
    esac
    start_variant_server "$variant" "$log-server.log"
    url="https://127.0.0.1:$PORT/bench.bin"
    local client=()
    case "$variant" in
        ours-h3|ours-hq|ours-nogso|ours-bbr|ours-bssl|ref-hq)
            # shellcheck disable=SC2207 # the flags are words
            client=("$(ours_dir "$variant")/quiche-client" $(ours_flags "$variant") $(ours_proto_flags "$variant") \
                --ca "$CERTS/rootca.crt" --dump-responses "$DIR/out" "$url") ;;
        quinn) client=(env QUINN_PEER_AES128=1 "$QUINN" client --ca "$CERTS/rootca.crt" --out "$DIR/out" --case transfer "$url") ;;
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
    stop_pid "$SERVER_PID"
    if [ "$status" != 0 ]; then
        cat "$log-client.err" >&2
        die "$variant run $run: the client failed (status $status; 124 = over ${TIMEOUT}s)"
    fi
    local summary bytes mbps got
    summary="$(grep '^bytes=' "$log-client.out" | tail -n 1)"
    bytes="$(sed -n 's/.*bytes=\([0-9]*\).*/\1/p' <<<"$summary")"
    mbps="$(sed -n 's/.*mbps=\([0-9.]*\).*/\1/p' <<<"$summary")"
    [ "$bytes" = "$SIZE" ] || die "$variant run $run: $bytes bytes received, $SIZE expected ($summary)"
    got="$(sha256sum "$DIR/out/bench.bin" | awk '{ print $1 }')"
    [ "$got" = "$WANT_SHA" ] || die "$variant run $run: the downloaded file differs (SHA-256 $got)"
    rm -f "$DIR/out/bench.bin"
    local wall user sys rss client_cpu gib
    read -r wall user sys rss <"$log-client.time"
    client_cpu="$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.2f", u + s }')"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$variant" "$run" "$mbps" "$wall" "$client_cpu" \
        "$server_cpu" "$rss" "$server_hwm" >>"$DIR/results.tsv"
    gib="$(awk -v s="$SIZE" 'BEGIN { print s / 1073741824 }')"
    printf '  %-10s run %s: %8s Mbit/s  %6ss  client CPU %6ss (%5.2f s/GiB)  server CPU %6ss (%5.2f s/GiB)  SHA-256 ok\n' \
        "$variant" "$run" "$mbps" "$wall" "$client_cpu" "$(awk -v c="$client_cpu" -v g="$gib" 'BEGIN { print c / g }')" \
        "$server_cpu" "$(awk -v c="$server_cpu" -v g="$gib" 'BEGIN { print c / g }')"
}

# Prints the table of medians of results.tsv: a row for each variant of $1 (space-separated;
# one with no rows prints `skipped: REASON`, REASON from $3, `name=reason|name=reason`), then
# a row for each ratio of $2 (`a/b a/b`; a ratio whose b did not run is left out).
transfer_medians() {
    awk -F'\t' -v size="$SIZE" -v runs="$RUNS" -v rows="$1" -v ratios="$2" -v reasons="$3" '
function median(impl, col,    n, i, j, t, v) {
    n = 0
    for (i = 1; i <= NR_; i++) if (row_impl[i] == impl) v[++n] = row[i, col] + 0
    for (i = 2; i <= n; i++) { t = v[i]; for (j = i - 1; j >= 1 && v[j] > t; j--) v[j + 1] = v[j]; v[j + 1] = t }
    return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
}
function line(name, a, b, c, d, e, f, g, h) {
    printf "%-19s %10s %8s %11s %11s %13s %13s %11s %11s\n", name, a, b, c, d, e, f, g, h
}
function values(impl) {
    for (c = 3; c <= 8; c++) m[impl, c] = median(impl, c)
    m[impl, 9] = m[impl, 5] / gib; m[impl, 10] = m[impl, 6] / gib
    line(impl, sprintf("%.1f", m[impl, 3]), sprintf("%.2f", m[impl, 4]), sprintf("%.2f", m[impl, 5]),
        sprintf("%.2f", m[impl, 6]), sprintf("%.2f", m[impl, 9]), sprintf("%.2f", m[impl, 10]),
        sprintf("%.1f", m[impl, 7] / 1024), sprintf("%.1f", m[impl, 8] / 1024))
}
function ratio(a, b,    c, r) {
    for (c = 3; c <= 10; c++) r[c] = m[b, c] > 0 ? sprintf("%.2f", m[a, c] / m[b, c]) : "-"
    line(a "/" b, r[3], r[4], r[5], r[6], r[9], r[10], r[7], r[8])
}
{ NR_ = NR; row_impl[NR] = $1; seen[$1] = 1; for (c = 3; c <= 8; c++) row[NR, c] = $c }
END {
    gib = size / 1073741824
    n = split(reasons, rs, "|")
    for (i = 1; i <= n; i++) if ((k = index(rs[i], "=")) > 0) why[substr(rs[i], 1, k - 1)] = substr(rs[i], k + 1)
    printf "median of %d runs, %.3f GiB per transfer (ceiling: receiver as client, sender as server)\n", runs, gib
    line("", "goodput", "wall", "client CPU", "server CPU", "client CPU", "server CPU", "client RSS", "server RSS")
    line("", "Mbit/s", "s", "s", "s", "s/GiB", "s/GiB", "MiB", "MiB")
    n = split(rows, vs, " ")
    for (i = 1; i <= n; i++) {
        if (seen[vs[i]]) values(vs[i])
        else printf "%-19s skipped: %s\n", vs[i], (vs[i] in why ? why[vs[i]] : "not run")
    }
    n = split(ratios, ps, " ")
    for (i = 1; i <= n; i++) {
        split(ps[i], ab, "/")
        if (seen[ab[1]] && seen[ab[2]]) ratio(ab[1], ab[2])
    }
}' "$DIR/results.tsv"
}

# Per-pair ratios of variant $1 to variant $2 (runs of the same number), goodput and the CPU
# seconds of each side: the spread behind the medians of an A/B.
pair_ratios() {
    awk -F'\t' -v a="$1" -v b="$2" '
$1 == a { ga[$2] = $3; ca[$2] = $5; sa[$2] = $6 }
$1 == b { gb[$2] = $3; cb[$2] = $5; sb[$2] = $6; order[++n] = $2 }
END {
    printf "%s/%s, run by run:", a, b
    for (i = 1; i <= n; i++) {
        r = order[i]
        if (!(r in ga) || gb[r] == 0 || sb[r] == 0 || cb[r] == 0) continue
        printf "  [%s] goodput %.3f server CPU %.3f client CPU %.3f", r, ga[r] / gb[r], sa[r] / sb[r], ca[r] / cb[r]
    }
    print ""
}' "$DIR/results.tsv"
}

if [ "$TRANSFERS" = 1 ]; then
    # The file served and the file downloaded, plus some slack.
    need_kib=$(((2 * SIZE + (64 << 20)) / 1024))
    free_kib="$(df -Pk "$DIR" | awk 'NR == 2 { print $4 }')"
    [ "$free_kib" -ge "$need_kib" ] || die "$DIR has $free_kib KiB free, the run needs $need_kib KiB"

    # The flag comes with the apps' GSO/GRO work; older builds lack it.
    NOGSO_SKIPPED=""
    if ! "$OURS_CLIENT" --help 2>&1 | grep -q -- --disable-gso \
        || ! "$OURS_SERVER" --help 2>&1 | grep -q -- --disable-gso; then
        NOGSO_SKIPPED="flag not available (no --disable-gso in quiche-client/quiche-server --help)"
    fi
    ceilings="ceiling ceiling-udp"
    if [ -n "$COMPARE" ]; then
        variants="ours-hq ref-hq"
        ratio_list="ours-hq/ref-hq ours-hq/ceiling ref-hq/ceiling ours-hq/ceiling-udp ref-hq/ceiling-udp"
    else
        variants="ours-h3 ours-hq ours-nogso ours-bbr quinn"
        ratio_list="ours-h3/ours-hq ours-bbr/ours-hq ours-hq/quinn ours-h3/quinn ours-nogso/quinn ours-hq/ceiling ours-h3/ceiling quinn/ceiling ours-hq/ceiling-udp"
        if [ "$BSSL" = 1 ]; then
            variants="$variants ours-bssl"
            ratio_list="$ratio_list ours-bssl/ours-hq"
        fi
    fi
    [ -z "$CEILING_SKIPPED" ] && variants="$variants $ceilings"
    # Variants that do not run, and why (for the table).
    reasons="ours-nogso=$NOGSO_SKIPPED|ceiling=$CEILING_SKIPPED|ceiling-udp=$CEILING_SKIPPED"
    rows="$variants"
    [ -n "$CEILING_SKIPPED" ] && rows="$rows $ceilings"

    step "generating $SIZE bytes of random data in $DIR"
    head -c "$SIZE" /dev/urandom >"$DIR/root/bench.bin"
    WANT_SHA="$(sha256sum "$DIR/root/bench.bin" | awk '{ print $1 }')"

    LOAD_START="$(cut -d' ' -f1 /proc/loadavg)"
    step "$RUNS transfers of $SIZE bytes per variant over 127.0.0.1, alternating ($(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg))"
    [ -n "$COMPARE" ] && echo "  ours-hq: the working tree ($(history_commit)); ref-hq: $COMPARE ($REF_NAME)"
    : >"$DIR/results.tsv"
    # The first transfer after the file was generated ran at about half the speed of the
    # later ones, with twice the client CPU (the kernel reclaiming memory for the download's
    # pages after the 1 GiB just written): one untimed warm-up transfer absorbs that.
    echo "  (warm-up, not counted)"
    transfer ours-hq warmup
    : >"$DIR/results.tsv"
    for run in $(seq "$RUNS"); do
        # Who goes first alternates too, so that none always follows another's page cache and
        # CPU frequency state.
        order="$variants"
        [ $((run % 2)) = 0 ] && order="$(tr ' ' '\n' <<<"$variants" | tac | xargs)"
        for variant in $order; do
            if [ "$variant" = ours-nogso ] && [ -n "$NOGSO_SKIPPED" ]; then
                printf '  %-10s run %s: skipped: %s\n' "$variant" "$run" "$NOGSO_SKIPPED"
                continue
            fi
            transfer "$variant" "$run"
        done
    done
    echo "(load after: $(cut -d' ' -f1-3 /proc/loadavg))"
    echo
    transfer_medians "$rows" "$ratio_list" "$reasons"
    if [ -n "$COMPARE" ]; then
        echo
        pair_ratios ours-hq ref-hq
    fi
fi

# ---------------------------------------------------------------- 2. handshakes, 3. idle heap

# The value of key $1 in a `key=value ...` line on stdin.
field() { tr ' ' '\n' | sed -n "s/^$1=//p"; }

# One bench-handshakes command for label $1 (ours, quinn, ours-bssl, ours-bssl-x25519) and mode
# $2, the rest of its arguments after them.
hs_cmd() {
    local label="$1" mode="$2"
    shift 2
    case "$label" in
        ours|quinn) taskset -c 0 "$HS" "$mode" --impl "$label" "$@" ;;
        ours-bssl) taskset -c 0 "$HS_BSSL" "$mode" --impl ours "$@" ;;
        ours-bssl-x25519) taskset -c 0 "$HS_BSSL" "$mode" --impl ours --curves X25519 "$@" ;;
    esac
}

HS_IMPLS="ours quinn"
[ "$BSSL" = 1 ] && HS_IMPLS="$HS_IMPLS ours-bssl ours-bssl-x25519"

if [ "$HS_N" -gt 0 ]; then
    step "handshakes per second on one core (taskset -c 0): $HS_N complete handshakes in memory per run, $HS_RUNS runs each, alternating"
    : >"$DIR/handshakes.tsv"
    for run in $(seq "$HS_RUNS"); do
        order="$HS_IMPLS"
        [ $((run % 2)) = 0 ] && order="$(tr ' ' '\n' <<<"$HS_IMPLS" | tac | xargs)"
        for impl in $order; do
            line="$(hs_cmd "$impl" rate -n "$HS_N" --certs "$CERTS")" \
                || die "bench-handshakes rate --impl $impl failed"
            printf '%s\t%s\t%s\t%s\t%s\n' "$impl" "$run" "$(field per_sec <<<"$line")" \
                "$(field allocs_per_handshake <<<"$line")" "$(field us_per_handshake <<<"$line")" \
                >>"$DIR/handshakes.tsv"
            printf '  %-16s run %s: %s\n' "$impl" "$run" "${line#rate }"
        done
    done
    echo
    printf 'median of %d runs   %14s %14s %20s\n' "$HS_RUNS" "handshakes/s" "us/handshake" "allocations/handshake"
    for impl in $HS_IMPLS; do
        col() { awk -F'\t' -v i="$impl" -v c="$1" '$1 == i { print $c }' "$DIR/handshakes.tsv" | median; }
        printf '%-19s %14.1f %14.1f %20.1f\n' "$impl" "$(col 3)" "$(col 5)" "$(col 4)"
        eval "HS_MEDIAN_${impl//-/_}=$(col 3)"
    done
    # shellcheck disable=SC2154 # set by eval above
    printf '%-19s %14.2f\n' "ours/quinn" "$(awk -v a="$HS_MEDIAN_ours" -v b="$HS_MEDIAN_quinn" 'BEGIN { print a / b }')"
    if [ "$BSSL" = 1 ]; then
        # shellcheck disable=SC2154 # set by eval above
        printf '%-19s %14.2f\n' "ours-bssl/ours" "$(awk -v a="$HS_MEDIAN_ours_bssl" -v b="$HS_MEDIAN_ours" 'BEGIN { print a / b }')"
        # shellcheck disable=SC2154 # set by eval above
        printf '%-19s %14.2f\n' "ours-bssl-x25519/ours" "$(awk -v a="$HS_MEDIAN_ours_bssl_x25519" -v b="$HS_MEDIAN_ours" 'BEGIN { print a / b }')"
        echo "(ours: rustls; ours-bssl: BoringSSL with its default groups; ours-bssl-x25519: BoringSSL with X25519 only, as rustls with ring offers)"
    fi

    step "heap held by one idle established connection ($IDLE_K pairs kept, counting allocator)"
    printf '%-10s %14s %14s %14s %18s %20s\n' "" "per connection" "client side" "server side" "caches, per pair" "sizeof(Connection)"
    heap_impls="ours quinn"
    [ "$BSSL" = 1 ] && heap_impls="$heap_impls ours-bssl"
    for impl in $heap_impls; do
        line="$(hs_cmd "$impl" heap -k "$IDLE_K" --certs "$CERTS")" \
            || die "bench-handshakes heap --impl $impl failed"
        [ "$impl" = ours ] && HEAP_OURS="$(field per_conn <<<"$line")"
        printf '%-10s %14s %14s %14s %18s %20s\n' "$impl" "$(field per_conn <<<"$line")" \
            "$(field client_per_conn <<<"$line")" "$(field server_per_conn <<<"$line")" \
            "$(field residual_per_pair <<<"$line")" "$(field conn_struct <<<"$line")"
    done
    echo "(bytes; per connection = (live heap after - before) / (2 x $IDLE_K); a side = what freeing its connections returned, / $IDLE_K)"
fi

# ---------------------------------------------------------------- 4. HTTP/3 requests per second

RPS_WARMUP=1000
RPS_BODY=1024

# One requests/s measurement against server $1 (ours or quic-go), run $2: appends to rps.tsv.
rps_run() {
    local server="$1" run="$2" log="$DIR/logs/rps-$1-$2" status line
    start_variant_server "$server" "$log-server.log"
    status=0
    timeout -k 5 "$TIMEOUT" /usr/bin/time -o "$log-client.time" -f '%e %U %S' \
        "$RPS" "https://127.0.0.1:$PORT/rps.bin" -n "$RPS_N" -c "$RPS_C" --warmup "$RPS_WARMUP" \
        --expect-len "$RPS_BODY" --ca "$CERTS/rootca.crt" >"$log-client.out" 2>"$log-client.err" \
        || status=$?
    sleep 0.3
    local server_cpu
    server_cpu="$(cpu_secs "$SERVER_PID")"
    stop_pid "$SERVER_PID"
    if [ "$status" != 0 ]; then
        cat "$log-client.err" >&2
        die "requests/s against $server, run $run: the client failed (status $status; 124 = over ${TIMEOUT}s)"
    fi
    line="$(grep '^rps ' "$log-client.out" | tail -n 1)"
    local wall user sys client_cpu total
    read -r wall user sys <"$log-client.time"
    client_cpu="$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.2f", u + s }')"
    # Every request the server answered (warm-up included) shares its CPU seconds.
    total=$((RPS_N + RPS_WARMUP))
    local srv_us cli_us
    srv_us="$(awk -v c="$server_cpu" -v n="$total" 'BEGIN { printf "%.1f", c * 1e6 / n }')"
    cli_us="$(awk -v c="$client_cpu" -v n="$total" 'BEGIN { printf "%.1f", c * 1e6 / n }')"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$server" "$run" "$(field per_sec <<<"$line")" \
        "$(field p50_us <<<"$line")" "$(field p90_us <<<"$line")" "$(field p99_us <<<"$line")" \
        "$srv_us" "$cli_us" "$(field max_us <<<"$line")" >>"$DIR/rps.tsv"
    printf '  %-7s run %s: %9s req/s  p50 %6s us  p90 %6s us  p99 %6s us  server CPU %5ss (%5s us/req)  client CPU %5ss (%5s us/req)  datagrams c->s %s s->c %s  client wake-ups %s\n' \
        "$server" "$run" "$(field per_sec <<<"$line")" "$(field p50_us <<<"$line")" \
        "$(field p90_us <<<"$line")" "$(field p99_us <<<"$line")" "$server_cpu" "$srv_us" \
        "$client_cpu" "$cli_us" "$(field datagrams_sent <<<"$line")" \
        "$(field datagrams_received <<<"$line")" "$(field wakeups <<<"$line")"
}

if [ "$RPS_N" -gt 0 ]; then
    head -c "$RPS_BODY" /dev/urandom >"$DIR/root/rps.bin"
    servers="ours quic-go"
    [ -n "$QUICGO_SKIPPED" ] && servers="ours"
    step "HTTP/3 requests/s on one connection: GET of a $RPS_BODY-byte file, $RPS_C in flight, $RPS_N counted (after $RPS_WARMUP), $RPS_RUNS runs per server, alternating (load $(cut -d' ' -f1-3 /proc/loadavg))"
    [ -n "$QUICGO_SKIPPED" ] && echo "  quic-go skipped: $QUICGO_SKIPPED"
    : >"$DIR/rps.tsv"
    for run in $(seq "$RPS_RUNS"); do
        order="$servers"
        [ $((run % 2)) = 0 ] && order="$(tr ' ' '\n' <<<"$servers" | tac | xargs)"
        for server in $order; do
            rps_run "$server" "$run"
        done
    done
    echo
    printf 'median of %d runs %12s %10s %10s %10s %16s %16s\n' "$RPS_RUNS" "req/s" "p50 us" "p90 us" "p99 us" "server us/req" "client us/req"
    for server in $servers; do
        col() { awk -F'\t' -v i="$server" -v c="$1" '$1 == i { print $c }' "$DIR/rps.tsv" | median; }
        printf '%-17s %12.1f %10.0f %10.0f %10.0f %16.1f %16.1f\n' "$server" "$(col 3)" "$(col 4)" \
            "$(col 5)" "$(col 6)" "$(col 7)" "$(col 8)"
        eval "RPS_MEDIAN_${server//-/_}=$(col 3)"
        eval "RPS_CPU_${server//-/_}=$(col 7)"
    done
    if [ -z "$QUICGO_SKIPPED" ]; then
        # shellcheck disable=SC2154 # set by eval above
        printf '%-17s %12.2f %10s %10s %10s %16.2f\n' "ours/quic-go" \
            "$(awk -v a="$RPS_MEDIAN_ours" -v b="$RPS_MEDIAN_quic_go" 'BEGIN { print a / b }')" "" "" "" \
            "$(awk -v a="$RPS_CPU_ours" -v b="$RPS_CPU_quic_go" 'BEGIN { print (b > 0 ? a / b : 0) }')"
    fi
    echo "(server/client us/req: CPU seconds of the process over all $((RPS_N + RPS_WARMUP)) requests, handshake and start-up included)"
fi

if [ -n "$HISTORY" ]; then
    echo
    note="-"
    [ -n "$OURS_BIN" ] && note="ours from $OURS_BIN"
    # A path relative to where run.sh was started (it runs from the repository's top).
    case "$HISTORY" in /*) ;; *) HISTORY="$START_DIR/$HISTORY" ;; esac
    history_append "$HISTORY" "${REF_NAME:--}" "$HS_MEDIAN_ours" "$HEAP_OURS" "$RPS_MEDIAN_ours" "$note"
fi
