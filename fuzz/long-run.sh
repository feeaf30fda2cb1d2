#!/usr/bin/env bash
# The long run: rotates every fuzz target on one core, SLICE seconds at a time, until the UTC
# time END (e.g. 16:05), with kept corpora in fuzz/corpus/<target>. Every slice's libFuzzer log
# goes to fuzz/longrun/logs/; `long-run.sh --table` sums them per target (time, executions,
# exec/s, coverage, findings).
#
# The binaries are read from fuzz/longrun/bin/<target> at the start of each slice, so a rebuilt
# target can be swapped in (`mv`) while the run goes on. Build them with
#     RUSTC_BOOTSTRAP=1 cargo fuzz build -O -s none -a
# and copy target/x86_64-unknown-linux-gnu/release/<target> there (`long-run.sh --install`).
# No sanitizer: the library is safe Rust, whose overflow and bounds checks panic with debug
# assertions on (-a), and the run gets several times the executions.
set -euo pipefail
cd "$(dirname "$0")"
BIN=longrun/bin
LOGS=longrun/logs
REL=target/x86_64-unknown-linux-gnu/release

install_bins() {
    mkdir -p "$BIN"
    for t in "$@"; do
        cp "$REL/$t" "$BIN/.$t.new"
        mv "$BIN/.$t.new" "$BIN/$t"
    done
}

table() {
    printf '| %-16s | %8s | %13s | %8s | %6s | %7s | %8s |\n' \
        target seconds executions exec/s cov ft findings
    printf '|%s|%s|%s|%s|%s|%s|%s|\n' ------------------ ---------- --------------- \
        ---------- -------- --------- ----------
    local total_s=0 total_e=0 total_f=0
    for t in $(ls "$BIN"); do
        local s=0 e=0 cov=? ft=? f=0
        for log in "$LOGS/$t".*.log; do
            [ -f "$log" ] || continue
            local n secs
            n=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1 || true)
            secs=$(grep -o '^# slice-seconds: [0-9]*' "$log" | grep -o '[0-9]*$' | tail -1 || true)
            e=$((e + ${n:-0}))
            s=$((s + ${secs:-0}))
            local line
            line=$(grep -E '^#[0-9]+.*cov: ' "$log" | tail -1 || true)
            if [ -n "$line" ]; then
                cov=$(echo "$line" | grep -o 'cov: [0-9]*' | grep -o '[0-9]*' || true)
                ft=$(echo "$line" | grep -o 'ft: [0-9]*' | grep -o '[0-9]*' || true)
            fi
            if grep -qE '^==[0-9]+== ERROR|deadly signal|Test unit written to' "$log"; then
                f=$((f + 1))
            fi
        done
        local rate=0
        [ "$s" -gt 0 ] && rate=$((e / s))
        printf '| %-16s | %8s | %13s | %8s | %6s | %7s | %8s |\n' "$t" "$s" "$e" "$rate" "$cov" "$ft" "$f"
        total_s=$((total_s + s))
        total_e=$((total_e + e))
        total_f=$((total_f + f))
    done
    printf '| %-16s | %8s | %13s | %8s | %6s | %7s | %8s |\n' total "$total_s" "$total_e" \
        $((total_e / (total_s > 0 ? total_s : 1))) "" "" "$total_f"
}

case "${1:-}" in
--install)
    shift
    install_bins "$@"
    exit 0
    ;;
--table)
    table
    exit 0
    ;;
esac

END="${1:?usage: long-run.sh END_UTC_HH:MM [SLICE_SECONDS] | --install TARGET... | --table}"
SLICE="${2:-120}"
end_epoch=$(date -u -d "$END" +%s)
mkdir -p "$LOGS"
while :; do
    for t in $(ls "$BIN"); do
        now=$(date -u +%s)
        left=$((end_epoch - now))
        [ "$left" -gt 5 ] || exit 0
        secs=$((left < SLICE ? left : SLICE))
        mkdir -p "corpus/$t" "artifacts/$t"
        if [ -d "seeds/$t" ]; then
            cp -n "seeds/$t"/* "corpus/$t/" 2>/dev/null || true
        fi
        log="$LOGS/$t.$(date -u +%Y%m%dT%H%M%S).log"
        start=$(date -u +%s)
        # Extra libFuzzer flags of a target (the conn targets' longer programs), read at
        # every slice.
        opts=()
        if [ -f "options/$t" ]; then
            read -r -a opts <"options/$t"
        fi
        nice -n 10 "$BIN/$t" "corpus/$t" -max_total_time="$secs" -timeout=30 "${opts[@]}" \
            -artifact_prefix="artifacts/$t/" -print_final_stats=1 >"$log" 2>&1 || true
        echo "# slice-seconds: $(($(date -u +%s) - start))" >>"$log"
    done
done
