#!/usr/bin/env bash
# cclab: the seed's congestion-control experiment on real sockets, through the user-space
# bottleneck of ../../../shared/netlab (linkem), with our apps, Linux TCP (tcpbench.py) and
# quinn's interop peer, alternating senders run by run, and one table at the end.
#
#   tools/cclab/run.sh [--rate 5mbit] [--rtt 60ms] [--queue 1bdp] [--loss 0,0.01,0.02,0.05]
#                      [--loss-dir down] [--size 8MiB] [--runs 5] [--seed 1]
#                      [--senders ours,ours-std,ours-reno,tcp,quinn] [--base-bin DIR] [--ours-bin DIR]
#                      [--timeout 300] [--out DIR] [--qlog] [--extra "ARGS"] [--nice N]
#
# Senders (all download SIZE from a server in the lab's server namespace):
#   ours        target/release quiche-server/-client, HTTP/0.9, CUBIC + HyStart++ (default)
#   ours-std    ... CUBIC, standard slow start      ours-search  ... CUBIC, SEARCH
#   ours-reno   ... Reno + HyStart++                ours-bbr     ... BBR
#   ours-mtu    ... CUBIC + HyStart++ with 1452-byte datagrams (quinn's PMTUD ceiling)
#   base, base-std, base-reno  the same with the binaries in --base-bin DIR (a before/after pair)
#   tcp, tcp-reno   Linux TCP CUBIC / Reno (tcpbench.py, TCP_INFO counters)
#   quinn       tools/interop/.build/bin/quinn-peer (quinn 0.11, its default CUBIC)
# Run r of every loss rate uses linkem seed SEED+r for every sender, so all senders meet the same
# random-loss stream (the packets it hits differ, as the senders' packets differ).
# --extra adds transport options to both of our programs (e.g. "--max-udp-payload 1200").
# --qlog writes our connections' qlogs under OUT/qlog/<label>/.
# --ours-bin DIR takes our binaries from DIR instead of target/release (keep a copy there when
# you rebuild during a long run).
# --nice N runs every endpoint (servers and clients of all senders) at that nice level (default
# -10; 0 for none): on a loaded machine a user-space receiver that waits for a CPU delays its
# ACKs by tens of milliseconds, which TCP's in-kernel receiver never does.
# Needs root (namespaces and TUN devices). Namespaces cclab-c/cclab-s (CCLAB_NS=x: x-c/x-s): it
# never touches netlab's default lab-c/lab-s, so another lab can run beside it. Not in CI: each 8 MiB run at 5 % loss
# takes 1.5 minutes.
set -euo pipefail
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
HERE="$REPO/tools/cclab"
# shellcheck source=SCRIPTDIR/lab.sh
. "$HERE/lab.sh"
NETLAB="${NETLAB:-$(cd "$REPO/../../shared/netlab" 2>/dev/null && pwd || echo /work/shared/netlab)}"

rate=5mbit rtt=60ms queue=1bdp losses=0,0.01,0.02,0.05 loss_dir=down size=8MiB runs=5 seed=1
senders=ours,ours-std,ours-reno,tcp,quinn base_bin="" ours_bin="" timeout=300 out="" qlog=0 extra=""
nice_level=-10
while [ $# -gt 0 ]; do
    case "$1" in
        --rate) rate="$2"; shift 2 ;;
        --rtt) rtt="$2"; shift 2 ;;
        --queue) queue="$2"; shift 2 ;;
        --loss) losses="$2"; shift 2 ;;
        --loss-dir) loss_dir="$2"; shift 2 ;;
        --size) size="$2"; shift 2 ;;
        --runs) runs="$2"; shift 2 ;;
        --seed) seed="$2"; shift 2 ;;
        --senders) senders="$2"; shift 2 ;;
        --base-bin) base_bin="$2"; shift 2 ;;
        --ours-bin) ours_bin="$2"; shift 2 ;;
        --timeout) timeout="$2"; shift 2 ;;
        --out) out="$2"; shift 2 ;;
        --qlog) qlog=1; shift ;;
        --extra) extra="$2"; shift 2 ;;
        --nice) nice_level="$2"; shift 2 ;;
        -h|--help) sed -n '2,30p' "$0"; exit 0 ;;
        *) echo "cclab: unknown option $1" >&2; exit 2 ;;
    esac
done
[ "$(id -u)" = 0 ] || { echo "cclab: must run as root" >&2; exit 2; }
case ",$senders," in *,base*) [ -x "$base_bin/quiche-server" ] || \
    { echo "cclab: the base senders need --base-bin DIR with quiche-server/-client" >&2; exit 2; } ;; esac

out="${out:-/tmp/cclab-$(date -u +%Y%m%dT%H%M%S)-$$}"
mkdir -p "$out"
NS_C="${CCLAB_NS:-cclab}-c" NS_S="${CCLAB_NS:-cclab}-s" ADDR_S=10.77.0.2
OURS="${ours_bin:-$TARGET/release}"
QUINN="$REPO/tools/interop/.build/bin/quinn-peer"
LINKEM_SRC="$out/../cclab-linkem"
LINKEM="$LINKEM_SRC/target/release/linkem"

# linkem: built from a copy of netlab's sources (netlab itself is read-only).
if [ ! -x "$LINKEM" ]; then
    rm -rf "$LINKEM_SRC" && cp -r "$NETLAB/linkem" "$LINKEM_SRC" && chmod -R u+w "$LINKEM_SRC"
    (cd "$LINKEM_SRC" && cargo build --release --quiet)
fi
case ",$senders," in *,ours*|*,base*) [ -n "$ours_bin" ] || build_apps ;; esac
case ",$senders," in *,quinn,*) [ -x "$QUINN" ] || "$REPO/tools/interop/setup.sh" ;; esac

# Files: a certificate for the QUIC servers, the file they serve.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
    -subj /CN=cclab -keyout "$out/key.pem" -out "$out/cert.pem" >/dev/null 2>&1
mkdir -p "$out/root" "$out/dl"
bytes="$(python3 -c "
import re,sys; m=re.fullmatch(r'(\d+)([KMG]i?B?)?', sys.argv[1]); n=int(m.group(1))
u=(m.group(2) or '')[:1]; print(n*{'':1,'K':1024,'M':1024**2,'G':1024**3}[u])" "$size")"
head -c "$bytes" /dev/urandom >"$out/root/file"

server_pid=""

lab_up() { # loss seed
    linkem_up "$out" "$LINKEM" --ns-c "$NS_C" --ns-s "$NS_S" --rate "$rate" --rtt "$rtt" \
        --queue "$queue" --loss "$1" --loss-dir "$loss_dir" --seed "$2"
}
in_s() { ip netns exec "$NS_S" "$@"; }
# The endpoints run at --nice's level (nice execs the command in turn).
NICE=()
[ "$nice_level" = 0 ] || NICE=(nice -n "$nice_level")
# For a server started with `&`: exec, so that $! is the server itself (ip netns exec, nice and
# env exec in turn) and stop_server's kill reaches it, not a subshell that would leave it running.
bg_s() { exec ip netns exec "$NS_S" ${NICE[@]+"${NICE[@]}"} "$@"; }
in_c() { ip netns exec "$NS_C" ${NICE[@]+"${NICE[@]}"} "$@"; }
wait_server_port() { # udp|tcp port: bound in the server's namespace within 5 s
    NETNS="$NS_S" wait_port "$1" "$2" 5 "$server_pid"
}
stop_server() { # the server's log, a pattern (ERE) its per-connection line matches
    wait_line "$1" "$2" 6 >/dev/null || true
    stop_pid "$server_pid"
    server_pid=""
}

run_one() { # sender loss seed run -> one result line appended to results.tsv
    local s="$1" loss="$2" sd="$3" r="$4" log="$out/logs/$1-$2-$4" bin="$OURS" cc=cubic ss=hystart
    mkdir -p "$out/logs"
    lab_up "$loss" "$sd"
    local secs="nan" retrans="n/a" lost="n/a" extra_f="" ok=1
    case "$s" in
    ours*|base*)
        case "$s" in base*) bin="$base_bin" ;; esac
        case "$s" in *-mtu-*) echo "cclab: -mtu goes last ($s)" >&2; exit 2 ;; esac
        case "$s" in *-std) ss=standard ;; *-search) ss=search ;; *-reno) cc=reno ;;
                     *-bbr) cc=bbr ;; esac
        local q=() mtu=()
        # quinn discovers the path MTU (up to a 1452-byte UDP payload); we do not: -mtu gives
        # ours the same datagram size, to compare the loss recovery alone.
        case "$s" in *-mtu) mtu=(--max-udp-payload 1452) ;; esac
        if [ "$qlog" = 1 ]; then mkdir -p "$out/qlog/$s-$loss-$r"; q=(env "QLOGDIR=$out/qlog/$s-$loss-$r"); fi
        # shellcheck disable=SC2086
        RUST_LOG=info bg_s ${q[@]+"${q[@]}"} "$bin/quiche-server" --listen "$ADDR_S:4433" \
            --cert "$out/cert.pem" --key "$out/key.pem" --root "$out/root" --no-retry \
            --cc-algorithm "$cc" --slow-start "$ss" ${mtu[@]+"${mtu[@]}"} $extra \
            >"$log.server" 2>&1 &
        server_pid=$!
        cleanup_pid "$server_pid"
        wait_server_port udp 4433 || ok=0
        # shellcheck disable=SC2086
        in_c timeout "$timeout" "$bin/quiche-client" --http09 --no-verify \
            ${mtu[@]+"${mtu[@]}"} $extra \
            "https://$ADDR_S:4433/file" >"$log.client" 2>&1 || ok=0
        stop_server "$log.server" "closed \("
        secs="$(field "$log.client" secs)"
        ours_server_fields "$log.server"
        ;;
    tcp|tcp-reno)
        case "$s" in tcp-reno) cc=reno ;; esac
        bg_s python3 "$NETLAB/tcpbench.py" server --bind "$ADDR_S" --cc "$cc" --max-conns 1 \
            >"$log.server" 2>&1 &
        server_pid=$!
        cleanup_pid "$server_pid"
        wait_server_port tcp 5201 || ok=0
        in_c timeout "$timeout" python3 "$NETLAB/tcpbench.py" client --connect "$ADDR_S:5201" \
            --bytes "$bytes" --timeout "$timeout" >"$log.client" 2>&1 || ok=0
        stop_server "$log.server" "peer="
        secs="$(field "$log.client" secs)"
        retrans="$(field "$log.client" total_retrans)"
        lost=n/a # TCP_INFO has no count of segments declared lost over the connection
        ;;
    quinn)
        bg_s "$QUINN" server --listen "$ADDR_S:4433" --cert "$out/cert.pem" \
            --key "$out/key.pem" --root "$out/root" >"$log.server" 2>&1 &
        server_pid=$!
        cleanup_pid "$server_pid"
        wait_server_port udp 4433 || ok=0
        rm -f "$out/dl/file"
        in_c timeout "$timeout" "$QUINN" client --no-verify --out "$out/dl" \
            "https://$ADDR_S:4433/file" >"$log.client" 2>&1 || ok=0
        stop_server "$log.server" "conn_stats"
        secs="$(field "$log.client" secs)"
        lost="$(field "$log.server" lost_packets)"
        extra_f="congestion_events=$(field "$log.server" congestion_events),mean_cwnd=$(field "$log.server" mean_cwnd)"
        ;;
    *) echo "cclab: unknown sender $s" >&2; exit 2 ;;
    esac
    linkem_down
    [ "$ok" = 1 ] || secs="fail"
    python3 - "$out/stats.json" "$s" "$loss" "$r" "${secs:-nan}" "${retrans:-n/a}" \
        "${lost:-n/a}" "${extra_f:-}" >>"$out/results.tsv" <<'EOF'
import json, sys
st = json.load(open(sys.argv[1]))
d = st.get("down", st.get("directions", {}).get("down", {}))
u = st.get("up", st.get("directions", {}).get("up", {}))
qd = d.get("drop_queue_pkts", 0) + u.get("drop_queue_pkts", 0)
rd = d.get("drop_loss_pkts", 0) + u.get("drop_loss_pkts", 0)
print("\t".join(sys.argv[2:6] + [str(qd), str(rd)] + sys.argv[6:9]))
EOF
    tail -1 "$out/results.tsv" | awk -F'\t' '{printf "  %-10s loss=%s run=%s  %s s  queue drops %s  random drops %s  retrans %s  lost %s %s\n",$1,$2,$3,$4,$5,$6,$7,$8,$9}'
}

load() { awk '{print $1, $2, $3}' /proc/loadavg; }
steal() { awk '/^cpu /{print $9}' /proc/stat; }
echo "cclab: rate=$rate rtt=$rtt queue=$queue loss=$losses ($loss_dir) size=$size runs=$runs senders=$senders nice=$nice_level -> $out"
echo "load at start: $(load)" | tee "$out/load.txt"
steal0="$(steal)"
: >"$out/results.tsv"
IFS=, read -ra L <<<"$losses"
IFS=, read -ra S <<<"$senders"
for loss in "${L[@]}"; do
    for r in $(seq "$runs"); do
        # Alternate: the senders' order rotates from run to run, so no one always runs first.
        n=${#S[@]}
        for i in $(seq 0 $((n - 1))); do
            run_one "${S[$(((i + r - 1) % n))]}" "$loss" "$((seed + r - 1))" "$r"
        done
        echo "load: $(load)" >>"$out/load.txt"
    done
done
steal1="$(steal)"
echo "load at end: $(load); steal during the runs: $(((steal1 - steal0) / 100)) s" | tee -a "$out/load.txt"

echo
"$HERE/table.py" --senders "$senders" "$out/results.tsv" | tee "$out/table.md"
