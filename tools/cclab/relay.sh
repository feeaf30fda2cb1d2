#!/usr/bin/env bash
# cclab over tools/relay: near-zero RTT on loopback, random loss on the server-to-client (data)
# direction only, our apps and quinn's peer alternating, one table at the end (issue 16 item 3).
# No root, no namespaces: the relay, the servers and the clients all sit on 127.0.0.1.
#
#   tools/cclab/relay.sh [--drop 0.05] [--size 20MiB] [--runs 10] [--seed 101]
#                        [--senders ours,ours-reno,quinn] [--timeout SECS] [--out DIR]
#                        [--ours-bin DIR] [--extra "ARGS"]
#
# Columns as in run.sh: "random drops" is the relay's s2c `dropped`; there is no queue.
set -euo pipefail
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
HERE="$REPO/tools/cclab"
# shellcheck source=SCRIPTDIR/lab.sh
. "$HERE/lab.sh"
drop=0.05 size=20MiB runs=10 seed=101 senders=ours,ours-reno,quinn timeout=120 out="" ours_bin=""
extra=""
while [ $# -gt 0 ]; do
    case "$1" in
        --drop) drop="$2"; shift 2 ;;
        --size) size="$2"; shift 2 ;;
        --runs) runs="$2"; shift 2 ;;
        --seed) seed="$2"; shift 2 ;;
        --senders) senders="$2"; shift 2 ;;
        --timeout) timeout="$2"; shift 2 ;;
        --out) out="$2"; shift 2 ;;
        --ours-bin) ours_bin="$2"; shift 2 ;;
        --extra) extra="$2"; shift 2 ;;
        -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
        *) echo "relay.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
out="${out:-/tmp/cclab-relay-$(date -u +%Y%m%dT%H%M%S)-$$}"
OURS="${ours_bin:-$TARGET/release}"
QUINN="$REPO/tools/interop/.build/bin/quinn-peer"
RELAY="$OURS/relay"
[ -x "$RELAY" ] || RELAY="$TARGET/release/relay"
# --ours-bin: that build as it is; the relay from this tree if that folder has none.
if [ -z "$ours_bin" ]; then build_apps relay; elif [ ! -x "$RELAY" ]; then build_packages release relay; fi
case ",$senders," in *,quinn,*) [ -x "$QUINN" ] || "$REPO/tools/interop/setup.sh" ;; esac
mkdir -p "$out/root" "$out/dl" "$out/logs"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
    -subj /CN=cclab -keyout "$out/key.pem" -out "$out/cert.pem" >/dev/null 2>&1
bytes="$(python3 -c "
import re,sys; m=re.fullmatch(r'(\d+)([KMG]i?B?)?', sys.argv[1]); n=int(m.group(1))
u=(m.group(2) or '')[:1]; print(n*{'':1,'K':1024,'M':1024**2,'G':1024**3}[u])" "$size")"
head -c "$bytes" /dev/urandom >"$out/root/file"
SPORT=24433 RPORT=24434

server_pid="" relay_pid=""

stop() { # pid log pattern (ERE): wait (6 s at most) for the pattern, then stop the process
    wait_line "$2" "$3" 6 >/dev/null || true
    stop_pid "$1"
}

run_one() { # sender seed run
    local s="$1" sd="$2" r="$3" log="$out/logs/$1-$3" cc=cubic ok=1
    local secs="nan" retrans="n/a" lost="n/a" extra_f=""
    "$RELAY" --listen "127.0.0.1:$RPORT" --server "127.0.0.1:$SPORT" --drop-s2c "$drop" \
        --seed "$sd" >"$log.relay" 2>&1 &
    relay_pid=$!
    cleanup_pid "$relay_pid"
    wait_port udp "$RPORT" 5 || ok=0
    case "$s" in
    ours*)
        case "$s" in *-reno) cc=reno ;; esac
        # shellcheck disable=SC2086
        RUST_LOG=info "$OURS/quiche-server" --listen "127.0.0.1:$SPORT" --cert "$out/cert.pem" \
            --key "$out/key.pem" --root "$out/root" --no-retry --cc-algorithm "$cc" $extra \
            >"$log.server" 2>&1 &
        server_pid=$!
        cleanup_pid "$server_pid"
        wait_port udp "$SPORT" 5 || ok=0
        # shellcheck disable=SC2086
        timeout "$timeout" "$OURS/quiche-client" --http09 --no-verify $extra \
            "https://127.0.0.1:$RPORT/file" >"$log.client" 2>&1 || ok=0
        stop "$server_pid" "$log.server" "closed \("
        secs="$(field "$log.client" secs)"
        ours_server_fields "$log.server"
        ;;
    quinn)
        "$QUINN" server --listen "127.0.0.1:$SPORT" --cert "$out/cert.pem" --key "$out/key.pem" \
            --root "$out/root" >"$log.server" 2>&1 &
        server_pid=$!
        cleanup_pid "$server_pid"
        wait_port udp "$SPORT" 5 || ok=0
        rm -f "$out/dl/file"
        timeout "$timeout" "$QUINN" client --no-verify --out "$out/dl" \
            "https://127.0.0.1:$RPORT/file" >"$log.client" 2>&1 || ok=0
        stop "$server_pid" "$log.server" "conn_stats"
        secs="$(field "$log.client" secs)"
        lost="$(field "$log.server" lost_packets)"
        extra_f="congestion_events=$(field "$log.server" congestion_events),mean_cwnd=$(field "$log.server" mean_cwnd)"
        ;;
    *) echo "relay.sh: unknown sender $s" >&2; exit 2 ;;
    esac
    server_pid=""
    stop_pid "$relay_pid"
    relay_pid=""
    local rd
    rd="$(grep '^s2c:' "$log.relay" | grep -oE 'dropped=[0-9]+' | head -1 | cut -d= -f2 || true)"
    [ "$ok" = 1 ] || secs="fail"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$s" "$drop" "$r" "${secs:-nan}" 0 "${rd:-n/a}" \
        "${retrans:-n/a}" "${lost:-n/a}" "${extra_f:-}" | tee -a "$out/results.tsv"
}

echo "relay.sh: drop=$drop (s2c) size=$size runs=$runs senders=$senders -> $out"
awk '{print "load at start:", $1, $2, $3}' /proc/loadavg | tee "$out/load.txt"
: >"$out/results.tsv"
IFS=, read -ra S <<<"$senders"
n=${#S[@]}
for r in $(seq "$runs"); do
    for i in $(seq 0 $((n - 1))); do
        run_one "${S[$(((i + r - 1) % n))]}" "$((seed + r - 1))" "$r"
    done
done
awk '{print "load at end:", $1, $2, $3}' /proc/loadavg | tee -a "$out/load.txt"
echo
"$HERE/table.py" --senders "$senders" "$out/results.tsv" | tee "$out/table.md"
