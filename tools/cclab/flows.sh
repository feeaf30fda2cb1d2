#!/usr/bin/env bash
# cclab, several flows through one bottleneck (issue 31): N flows, each its own server and
# client process pair and its own implementation, share one emulated link (netlab's linkem);
# flow i starts STAGGER*i seconds after the first and every flow runs until the end; each
# receiver logs its bytes every 100 ms. Per run: one picture (goodput per flow, fair share,
# Jain's index over sliding 5-s windows) and one JSON line of figures (settling time, Jain over
# the last 30 s, shares of the last 30 s, the queue's drops); at the end a table of the medians
# over the seeds (flows-table.py).
#
#   tools/cclab/flows.sh --flows ours-cubic,tcp-cubic [--queues 0.5,1,4] [--runs 5] [--seed 1]
#       [--rate 20mbit] [--rtt 40ms] [--stagger 5] [--duration 60] [--loss 0] [--name NAME]
#       [--out DIR] [--nice -10] [--timeout-extra 20]
#
# Flows: ours-cubic, ours-reno, ours-bbr (this repository's library),
# quiche-cubic, quiche-bbr2 (crates.io quiche 0.30.0), both through tools/cclab/flowpeer (one
# program on quiche's API, built on each library); quinn-cubic, quinn-bbr (tools/interop's
# quinn-peer); tcp-cubic, tcp-reno, tcp-bbr (Linux TCP, netlab's tcpbench.py server, per-socket
# congestion control). A flow spec may end in +MS: that flow's packets get MS more round-trip
# time (half each way, after the shared queue), e.g. `ours-cubic,ours-cubic+60` with --rtt 20ms
# is the 20 ms against 80 ms RTT-fairness pair. Queues are in BDPs of --rate x --rtt.
# Results append to OUT/results.jsonl, so invocations with the same --out build one table.
# Needs root. Namespaces cclabf-c/cclabf-s (CCLAB_NS=x: x-c/x-s).
set -euo pipefail
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
HERE="$REPO/tools/cclab"
# shellcheck source=SCRIPTDIR/lab.sh
. "$HERE/lab.sh"
NETLAB="${NETLAB:-$(cd "$REPO/../../shared/netlab" 2>/dev/null && pwd || echo /work/shared/netlab)}"

flows="" queues=1 runs=5 seed=1 rate=20mbit rtt=40ms stagger=5 duration=60 loss=0 name=""
out="" nice_level=-10 timeout_extra=20
while [ $# -gt 0 ]; do
    case "$1" in
        --flows) flows="$2"; shift 2 ;;
        --queues) queues="$2"; shift 2 ;;
        --runs) runs="$2"; shift 2 ;;
        --seed) seed="$2"; shift 2 ;;
        --rate) rate="$2"; shift 2 ;;
        --rtt) rtt="$2"; shift 2 ;;
        --stagger) stagger="$2"; shift 2 ;;
        --duration) duration="$2"; shift 2 ;;
        --loss) loss="$2"; shift 2 ;;
        --name) name="$2"; shift 2 ;;
        --out) out="$2"; shift 2 ;;
        --nice) nice_level="$2"; shift 2 ;;
        --timeout-extra) timeout_extra="$2"; shift 2 ;;
        -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
        *) echo "flows.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
[ -n "$flows" ] || { echo "flows.sh: --flows is required" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "flows.sh: must run as root" >&2; exit 2; }
name="${name:-$flows}"
out="${out:-/tmp/cclab-flows-$(date -u +%Y%m%dT%H%M%S)-$$}"
mkdir -p "$out/png" "$out/logs"
NS_C="${CCLAB_NS:-cclabf}-c" NS_S="${CCLAB_NS:-cclabf}-s" ADDR_S=10.77.0.2
BUILD="$TARGET/cclab"
FP_OURS="${FP_OURS:-$BUILD/flowpeer-ours/release/cclab-flowpeer}"
FP_QUICHE="${FP_QUICHE:-$BUILD/flowpeer-upstream/release/cclab-flowpeer}"
QUINN="$REPO/tools/interop/.build/bin/quinn-peer"
FLOWS_BIN="$TARGET/release/cclab-flows"
LINKEM_SRC="$BUILD/linkem-portdelay"
LINKEM="$LINKEM_SRC/target/release/linkem"

# --- builds (each only when missing)
if [ ! -x "$LINKEM" ]; then
    # netlab's linkem, copied (netlab is read-only) and given per-port extra delay.
    rm -rf "$LINKEM_SRC" && mkdir -p "$BUILD" && cp -r "$NETLAB/linkem" "$LINKEM_SRC"
    chmod -R u+w "$LINKEM_SRC" && rm -rf "$LINKEM_SRC/target"
    cp "$HERE/linkem-portdelay.rs" "$LINKEM_SRC/src/portdelay.rs"
    # The copy lives under this repository's target/: not a member of its workspace.
    grep -q '^\[workspace\]' "$LINKEM_SRC/Cargo.toml" || printf '\n[workspace]\n' >>"$LINKEM_SRC/Cargo.toml"
    python3 - "$LINKEM_SRC/src/main.rs" <<'EOF'
import sys
p = sys.argv[1]; s = open(p).read()
old_push = "links[d].push(at, buf[..len].to_vec());"
assert s.count(old_push) == 1 and s.count("mod emu;") == 1, "linkem's main.rs changed"
s = s.replace(old_push, "links[d].push(at + portdelay::extra_ns(&buf[..len]), buf[..len].to_vec());")
s = s.replace("mod emu;", "mod emu;\nmod portdelay;")
open(p, "w").write(s)
EOF
    (cd "$LINKEM_SRC" && cargo build --release --quiet)
fi
build_packages release cclab-flows
need() { case ",$flows," in *",$1"*) return 0 ;; esac; return 1; }
if need ours && [ ! -x "$FP_OURS" ]; then
    cargo build --release --quiet --manifest-path "$HERE/flowpeer/Cargo.toml" --features ours \
        --target-dir "$BUILD/flowpeer-ours"
fi
if need quiche && [ ! -x "$FP_QUICHE" ]; then
    # quiche 0.30.0 builds BoringSSL: cmake, clang, libclang-dev (as tools/compat/api-check.sh).
    missing=()
    command -v cmake >/dev/null 2>&1 || missing+=(cmake)
    command -v clang >/dev/null 2>&1 || missing+=(clang)
    dpkg -s libclang-dev >/dev/null 2>&1 || missing+=(libclang-dev)
    if [ "${#missing[@]}" -gt 0 ]; then
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
    fi
    cargo build --release --quiet --manifest-path "$HERE/flowpeer/Cargo.toml" --features upstream \
        --target-dir "$BUILD/flowpeer-upstream"
fi
if need quinn && [ ! -x "$QUINN" ]; then "$REPO/tools/interop/setup.sh"; fi

# --- files: a certificate, a large file for quinn's server (sparse), a sink for its client
if [ ! -f "$out/cert.pem" ]; then
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
        -subj /CN=cclab -keyout "$out/key.pem" -out "$out/cert.pem" >/dev/null 2>&1
fi
mkdir -p "$out/root" "$out/sink"
[ -f "$out/root/file" ] || truncate -s 4G "$out/root/file"
ln -sf /dev/null "$out/sink/file"

# --- the lab
pids=()
NICE=()
[ "$nice_level" = 0 ] || NICE=(nice -n "$nice_level")

IFS=, read -ra F <<<"$flows"
IFS=, read -ra Q <<<"$queues"
# The extra round-trip time of each flow (+MS suffix), halved into one-way delay per port.
port_delay="" peers=()
for i in "${!F[@]}"; do
    spec="${F[$i]}" peer="${F[$i]%%+*}" extra=0
    [ "$spec" != "$peer" ] && extra="${spec#*+}"
    peers+=("$peer")
    if [ "$extra" != 0 ]; then
        half="$(python3 -c "print(float('$extra') / 2)")"
        port_delay="$port_delay,$((4433 + i)):$half,$((5201 + i)):$half"
    fi
done

lab_up() { # queue(BDPs) seed
    LINKEM_PORT_DELAY="${port_delay#,}" linkem_up "$out" "$LINKEM" --ns-c "$NS_C" --ns-s "$NS_S" \
        --rate "$rate" --rtt "$rtt" --queue "${1}xbdp" --loss "$loss" --loss-dir down --seed "$2"
}
bg_s() { exec ip netns exec "$NS_S" ${NICE[@]+"${NICE[@]}"} "$@"; }
wait_server_port() { # udp|tcp port: bound in the server's namespace within 5 s
    NETNS="$NS_S" wait_port "$1" "$2" 5 && return 0
    echo "flows.sh: nothing listens on $1 port $2" >&2
    return 1
}

start_server() { # peer index log
    local p=$1 i=$2 log=$3 port=$((4433 + $2)) tport=$((5201 + $2)) srv_dur=$((duration + timeout_extra))
    case "$p" in
    ours-*|quiche-*)
        local bin="$FP_OURS" cc="${p#*-}"
        case "$p" in quiche-*) bin="$FP_QUICHE" ;; esac
        case "$cc" in bbr2) cc=bbr ;; esac
        bg_s timeout "$((srv_dur + 30))" "$bin" server --listen "$ADDR_S:$port" \
            --cert "$out/cert.pem" --key "$out/key.pem" --cc "$cc" --duration "$srv_dur" \
            >"$log" 2>&1 &
        pids+=($!); cleanup_pid "$!"; wait_server_port udp "$port" ;;
    quinn-*)
        QUINN_CC="${p#quinn-}" bg_s timeout "$((srv_dur + 30))" "$QUINN" server \
            --listen "$ADDR_S:$port" --cert "$out/cert.pem" --key "$out/key.pem" \
            --root "$out/root" >"$log" 2>&1 &
        pids+=($!); cleanup_pid "$!"; wait_server_port udp "$port" ;;
    tcp-*)
        bg_s timeout "$((srv_dur + 30))" python3 "$NETLAB/tcpbench.py" server --bind "$ADDR_S" \
            --port "$tport" --cc "${p#tcp-}" --max-conns 1 --max-time "$srv_dur" >"$log" 2>&1 &
        pids+=($!); cleanup_pid "$!"; wait_server_port tcp "$tport" ;;
    *) echo "flows.sh: unknown flow $p" >&2; exit 2 ;;
    esac
}

run_client() { # peer index delay_s duration_s log rate_log
    local p=$1 i=$2 port=$((4433 + $2)) tport=$((5201 + $2)) d=$4
    sleep "$3"
    local to=$((${d%.*} + timeout_extra))
    local c=(ip netns exec "$NS_C" ${NICE[@]+"${NICE[@]}"} timeout "$to")
    case "$p" in
    ours-*) "${c[@]}" "$FP_OURS" client --connect "$ADDR_S:$port" --duration "$d" --log "$6" ;;
    quiche-*) "${c[@]}" "$FP_QUICHE" client --connect "$ADDR_S:$port" --duration "$d" --log "$6" ;;
    quinn-*)
        # quinn's client downloads the 4 GiB file into /dev/null until the time is up.
        CCLAB_RATE_LOG="$6" ip netns exec "$NS_C" ${NICE[@]+"${NICE[@]}"} timeout -k 5 "$d" \
            "$QUINN" client --no-verify --out "$out/sink" "https://$ADDR_S:$port/file" || true ;;
    tcp-*) "${c[@]}" "$FLOWS_BIN" tcp-recv --connect "$ADDR_S:$tport" --duration "$d" --log "$6" ;;
    esac >"$5" 2>&1 || true
}

load() { awk '{print $1}' /proc/loadavg; }
steal() { awk '/^cpu /{print $9}' /proc/stat; }
rate_mbit="$(python3 -c "
import re; m = re.fullmatch(r'([0-9.]+)([kmg]?)(bit|bps)?', '$rate'.lower())
print(float(m.group(1)) * {'': 1e-6, 'k': 1e-3, 'm': 1, 'g': 1e3}[m.group(2)])")"
echo "flows.sh: $name: flows=$flows rate=$rate rtt=$rtt queues=$queues loss=$loss runs=$runs stagger=${stagger}s duration=${duration}s -> $out"

for q in "${Q[@]}"; do
    for r in $(seq "$runs"); do
        sd=$((seed + r - 1)) tag="$(echo "$name" | tr ',+/ ' '__-_')-q$q-s$sd"
        load0="$(load)" steal0="$(steal)"
        lab_up "$q" "$sd"
        pids=()
        for i in "${!peers[@]}"; do start_server "${peers[$i]}" "$i" "$out/logs/$tag-$i.server"; done
        epoch_ms="$(date +%s%3N)"
        clients=()
        for i in "${!peers[@]}"; do
            rm -f "$out/logs/$tag-$i.rate"
            run_client "${peers[$i]}" "$i" $((stagger * i)) $((duration - stagger * i)) \
                "$out/logs/$tag-$i.client" "$out/logs/$tag-$i.rate" &
            clients+=($!)
        done
        for p in "${clients[@]}"; do wait "$p" || true; done
        # Servers end on their own once their client closed; give them a moment, then stop them.
        sleep 1
        for p in "${pids[@]}"; do stop_pid "$p"; done
        pids=()
        linkem_down
        args=()
        for i in "${!peers[@]}"; do args+=("${F[$i]}@$((stagger * i))=$out/logs/$tag-$i.rate"); done
        title="$name, ${rate} ${rtt} queue ${q} BDP, seed $sd"
        [ "$loss" != 0 ] && title="$title, loss $loss"
        metrics="$("$FLOWS_BIN" analyze --epoch-ms "$epoch_ms" --end "$duration" \
            --rate-mbit "$rate_mbit" --png "$out/png/$tag.png" --title "$title" "${args[@]}")" \
            || metrics='{"error": "analyze failed"}'
        # The servers' counters (lost packets) and the queue's drops.
        lost=()
        for i in "${!peers[@]}"; do
            # flowpeer's server: "closed ... lost=N"; quinn's: "lost_packets=N"; TCP: none.
            lost+=("$({ grep '^closed ' "$out/logs/$tag-$i.server" || true; grep -o 'lost_packets=[0-9]*' \
                "$out/logs/$tag-$i.server" || true; } 2>/dev/null | grep -oE 'lost(_packets)?=[0-9]+' |
                tail -1 | cut -d= -f2 || true)")
        done
        python3 - "$out/stats.json" "$metrics" "$name" "$flows" "$q" "$sd" "$loss" "$load0" \
            "$(load)" "$((($(steal) - steal0) / 100))" "$rate" "$rtt" "${lost[@]}" \
            >>"$out/results.jsonl" <<'EOF'
import json, sys
st = json.load(open(sys.argv[1]))
m = json.loads(sys.argv[2])
d, u = st.get("down", {}), st.get("up", {})
m.update(scenario=sys.argv[3], flows=sys.argv[4], queue_bdp=float(sys.argv[5]),
         seed=int(sys.argv[6]), loss=float(sys.argv[7]), load_start=float(sys.argv[8]),
         load_end=float(sys.argv[9]), steal_s=int(sys.argv[10]), rate=sys.argv[11],
         rtt=sys.argv[12], queue_drops=d.get("drop_queue_pkts", 0) + u.get("drop_queue_pkts", 0),
         random_drops=d.get("drop_loss_pkts", 0) + u.get("drop_loss_pkts", 0),
         sender_lost=[int(x) if x else None for x in sys.argv[13:]])
print(json.dumps(m))
EOF
        tail -1 "$out/results.jsonl" | python3 -c "
import json, sys; m = json.load(sys.stdin)
s = m.get('settle_s'); sh = ' '.join(f'{x:.3f}' for x in m.get('shares', []))
print(f\"  q={m['queue_bdp']:g} seed={m['seed']}: settle={'never' if s is None else f'{s:.1f}s'} \"
      f\"jain30={m.get('jain_tail', 0):.3f} shares={sh} drops={m['queue_drops']} \"
      f\"lost={m['sender_lost']} load={m['load_start']}\")"
    done
done
"$HERE/flows-table.py" "$out/results.jsonl" | tee "$out/table.md"
