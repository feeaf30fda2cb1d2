#!/usr/bin/env bash
# Issue 31's scenarios (20 Mbit/s, 40 ms RTT; queues 0.5, 1 and 4 BDP; seeds 1-5), one command
# per table: every cell runs flows.sh in turn and the table of medians is printed at the end.
#
#   tools/cclab/issue31.sh [--lanes 2] [--only GROUP[,GROUP]] [--exclude PEER[,PEER]]
#                          [--include PEER[,PEER]] [--runs 5] [--nice -10] [--ns PREFIX]
#                          [--out DIR]
#
# Groups: cubic2 (CUBIC x 2), cubic-tcp (ours CUBIC against one Linux CUBIC), bbr2 (BBR x 2),
# bbr-cubic (BBR against one Linux CUBIC), rtt (20 ms against 80 ms, 1 BDP), four (4 flows,
# 1 BDP), shallow (one flow alone behind a 0.1-BDP queue, at 0 and 5 % loss: the packets each
# sender lost and its goodput). --exclude skips the cells with a flow whose name contains one
# of the PEERs, --include runs only those. --lanes N runs N cells at a time, each in its own
# lab (namespaces PREFIX-L-c/-s; PREFIX defaults to cclab31: give two invocations running at
# once different ones); the flows are cheap at 20 Mbit/s and linkem runs at real-time
# priority. --nice is the endpoints' nice level (flows.sh). Each lane writes OUT/laneL/; the
# table merges them.
set -euo pipefail
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
HERE="$REPO/tools/cclab"
lanes=2 only="" exclude="" include="" runs=5 out="" ns=cclab31 nice_level=-10
while [ $# -gt 0 ]; do
    case "$1" in
        --lanes) lanes="$2"; shift 2 ;;
        --only) only="$2"; shift 2 ;;
        --exclude) exclude="$2"; shift 2 ;;
        --include) include="$2"; shift 2 ;;
        --runs) runs="$2"; shift 2 ;;
        --out) out="$2"; shift 2 ;;
        --ns) ns="$2"; shift 2 ;;
        --nice) nice_level="$2"; shift 2 ;;
        -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
        *) echo "issue31.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
out="${out:-/tmp/cclab-issue31-$(date -u +%Y%m%dT%H%M%S)}"
mkdir -p "$out"

# group|name|flows|queues|extra flows.sh options
CELLS="
cubic2|ours-cubic x2|ours-cubic,ours-cubic|0.5,1,4|
cubic2|tcp-cubic x2|tcp-cubic,tcp-cubic|0.5,1,4|
cubic2|quiche-cubic x2|quiche-cubic,quiche-cubic|0.5,1,4|
cubic2|quinn-cubic x2|quinn-cubic,quinn-cubic|0.5,1,4|
cubic-tcp|ours-cubic vs tcp-cubic|ours-cubic,tcp-cubic|0.5,1,4|
cubic-tcp|tcp-cubic vs ours-cubic|tcp-cubic,ours-cubic|1|
bbr2|ours-bbr x2|ours-bbr,ours-bbr|0.5,1,4|
bbr2|tcp-bbr x2|tcp-bbr,tcp-bbr|0.5,1,4|
bbr2|quiche-bbr2 x2|quiche-bbr2,quiche-bbr2|0.5,1,4|
bbr2|quinn-bbr x2|quinn-bbr,quinn-bbr|0.5,1,4|
bbr-cubic|ours-bbr vs tcp-cubic|ours-bbr,tcp-cubic|0.5,1,4|
bbr-cubic|tcp-bbr vs tcp-cubic|tcp-bbr,tcp-cubic|0.5,1,4|
bbr-cubic|quiche-bbr2 vs tcp-cubic|quiche-bbr2,tcp-cubic|0.5,1,4|
rtt|ours-cubic 20/80 ms|ours-cubic,ours-cubic+60|1|--rtt 20ms
rtt|tcp-cubic 20/80 ms|tcp-cubic,tcp-cubic+60|1|--rtt 20ms
rtt|ours-reno 20/80 ms|ours-reno,ours-reno+60|1|--rtt 20ms
rtt|tcp-reno 20/80 ms|tcp-reno,tcp-reno+60|1|--rtt 20ms
shallow|ours-cubic alone, 0.1 BDP|ours-cubic|0.1|--duration 30
shallow|ours-bbr alone, 0.1 BDP|ours-bbr|0.1|--duration 30
shallow|tcp-cubic alone, 0.1 BDP|tcp-cubic|0.1|--duration 30
shallow|ours-cubic alone, 0.1 BDP, 5 % loss|ours-cubic|0.1|--duration 30 --loss 0.05
shallow|ours-bbr alone, 0.1 BDP, 5 % loss|ours-bbr|0.1|--duration 30 --loss 0.05
shallow|tcp-cubic alone, 0.1 BDP, 5 % loss|tcp-cubic|0.1|--duration 30 --loss 0.05
four|ours-cubic x4|ours-cubic,ours-cubic,ours-cubic,ours-cubic|1|--duration 65
four|tcp-cubic x4|tcp-cubic,tcp-cubic,tcp-cubic,tcp-cubic|1|--duration 65
"

run_lane() { # lane number; runs every lanes-th cell
    local lane=$1 k=0
    while IFS='|' read -r group name flows queues extra; do
        [ -n "$group" ] || continue
        if [ -n "$only" ] && [[ ",$only," != *",$group,"* ]]; then continue; fi
        local skip=0 x
        for x in ${exclude//,/ }; do [[ "$flows" == *"$x"* ]] && skip=1; done
        [ "$skip" = 0 ] || continue
        if [ -n "$include" ]; then
            skip=1
            for x in ${include//,/ }; do [[ "$flows" == *"$x"* ]] && skip=0; done
            [ "$skip" = 0 ] || continue
        fi
        k=$((k + 1))
        [ $(((k - 1) % lanes)) = "$lane" ] || continue
        # shellcheck disable=SC2086
        CCLAB_NS="$ns-$lane" "$HERE/flows.sh" --flows "$flows" --queues "$queues" \
            --runs "$runs" --name "$name" --out "$out/lane$lane" --nice "$nice_level" \
            --duration 50 $extra ||
            echo "issue31.sh: cell '$name' failed" >&2
    done <<<"$CELLS"
}

echo "issue31.sh: $lanes lanes -> $out (load $(cut -d' ' -f1-3 /proc/loadavg))"
pids=()
for l in $(seq 0 $((lanes - 1))); do
    run_lane "$l" >"$out/lane$l.log" 2>&1 &
    pids+=($!)
    cleanup_pid "$!"
done
for p in "${pids[@]}"; do wait "$p" || true; forget_pid "$p"; done
names="$(awk -F'|' 'NF > 2 {print $2}' <<<"$CELLS" | paste -sd, -)"
"$HERE/flows-table.py" --scenarios "$names" "$out"/lane*/results.jsonl | tee "$out/table.md"
