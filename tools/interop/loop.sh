#!/usr/bin/env bash
# Runs interop case sets N times in a row and stops at the first failure, keeping the logs of
# the run that failed (run.sh keeps a failed test's logs, trace and downloads). For flakes: a
# set that passes once can still fail one time in twenty.
#
#   loop.sh N SET... [-- RUN.SH OPTIONS]
#
# SET is a named set or run.sh's options in one argument; options after -- go to every run:
#   loop.sh 20 loss
#   loop.sh 20 loss -- --qlog
#   loop.sh 5 '--clients ours --servers quic-go --cases handshakeloss'
# Named sets:
#   loss   the loss and corruption cases as tools/test.sh runs them: handshakeloss,
#          transferloss and handshakecorruption, ours -> quic-go and quic-go -> ours
# Each iteration runs the sets in order. run.sh's output goes to the terminal and to
# tools/interop/.build/loops/STAMP/ITERATION.SET.log (each run's logs stay where run.sh puts
# them, .build/runs/). The last lines: one per iteration with its time, then the total.
# Exit status 0 when all N iterations passed.
set -uo pipefail
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
HERE="$REPO/tools/interop"

LOSS_CASES=handshakeloss,transferloss,handshakecorruption

n="${1:-}"
shift || true
if ! [[ "$n" =~ ^[1-9][0-9]*$ ]] || [ $# = 0 ]; then
    sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
fi

specs=()
extra=()
while [ $# -gt 0 ]; do
    set="$1"
    shift
    case "$set" in
        --) extra=("$@"); break ;;
        loss) specs+=("--clients ours --servers quic-go --cases $LOSS_CASES"
                      "--clients quic-go --servers ours --cases $LOSS_CASES") ;;
        -*) specs+=("$set") ;;
        *) echo "loop.sh: unknown set '$set'" >&2; exit 2 ;;
    esac
done

# One build for all the runs (run.sh skips its own; see lib.sh).
build_apps relay || { echo "loop.sh: build failed" >&2; exit 1; }

LOOP="$HERE/.build/loops/$(date +%Y%m%d-%H%M%S)-$$"
mkdir -p "$LOOP"
summary=()
start=$SECONDS
for i in $(seq 1 "$n"); do
    t_iter=$SECONDS
    times=()
    for k in "${!specs[@]}"; do
        log="$LOOP/$i.$k.log"
        read -r -a args <<<"${specs[$k]}"
        args+=(${extra[@]+"${extra[@]}"})
        echo "== loop.sh: iteration $i of $n: run.sh ${args[*]}"
        t0=$SECONDS
        "$HERE/run.sh" "${args[@]}" 2>&1 | tee "$log"
        rc=${PIPESTATUS[0]}
        times+=("$((SECONDS - t0))s")
        run_dir="$(sed -n 's/^run\.sh: logs in \([^;]*\);.*/\1/p' "$log")"
        if [ "$rc" != 0 ]; then
            echo
            echo "loop.sh: iteration $i of $n failed after $((SECONDS - start)) s: run.sh ${specs[$k]}"
            grep -E '^[a-z0-9-]+ +[a-z0-9-]+ +-> +[a-z0-9-]+ +fail' "$log" || true
            echo "loop.sh: logs of the failed run: ${run_dir:-see $log}"
            echo "loop.sh: $((i - 1)) iterations passed before it"
            exit 1
        fi
    done
    summary+=("iteration $i: $((SECONDS - t_iter)) s (${times[*]})")
done
echo
printf 'loop.sh: %s\n' "${summary[@]}"
echo "loop.sh: $n of $n iterations passed in $((SECONDS - start)) s ($(cut -d' ' -f1-3 /proc/loadavg) load at the end); logs in $LOOP"
