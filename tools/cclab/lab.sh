# shellcheck shell=bash
# What the cclab scripts share (sourced after tools/lib.sh): netlab's link emulator up and
# down, and the figures read from the endpoints' logs.
#
#   linkem_up OUT LINKEM ARGS...   starts LINKEM ARGS with its ready file and stats in OUT (the
#                                  stats in OUT/stats.json, its log in OUT/linkem.log) and waits
#                                  (20 s) until its namespaces are up; sets linkem_pid
#   linkem_down                    stops it (SIGTERM: it takes its namespaces down; 10 s)
#   field FILE KEY                 the last value of KEY=VALUE in FILE, or nothing
#   ours_server_fields LOG         from our server's log (RUST_LOG=info): sets retrans, lost
#                                  and extra_f (spurious losses, PTOs, resent per lost byte)

linkem_pid=""

linkem_up() {
    local out="$1"
    shift
    rm -f "$out/ready" "$out/stats.json"
    "$@" --replace --ready-file "$out/ready" --stats "$out/stats.json" \
        >"$out/linkem.log" 2>&1 </dev/null &
    linkem_pid=$!
    cleanup_pid "$linkem_pid"
    for _ in $(seq 200); do [ -f "$out/ready" ] && return 0; sleep 0.1; done
    echo "$(basename "$0"): linkem did not come up; see $out/linkem.log" >&2
    exit 1
}

linkem_down() {
    stop_pid "$linkem_pid" 10
    linkem_pid=""
}

field() {
    grep -oE "(^|[ (])$2=[0-9.]+" "$1" 2>/dev/null | tail -1 | cut -d= -f2 || true
}

ours_server_fields() {
    local log="$1" rb lb
    # shellcheck disable=SC2034 # for the caller
    retrans="$(field "$log" retrans)"
    # shellcheck disable=SC2034 # for the caller
    lost="$(grep -o '[0-9]* lost,' "$log" | tail -1 | cut -d' ' -f1 || true)"
    extra_f="$(grep -o 'spurious_lost=[0-9]* pto_count=[0-9]*' "$log" | tail -1 | tr ' ' , || true)"
    # STREAM bytes sent again per STREAM byte declared lost (1.0: only losses resent).
    rb="$(field "$log" stream_resent_bytes)" lb="$(field "$log" stream_lost_bytes)"
    if [ -n "$rb" ] && [ -n "$lb" ] && [ "$lb" != 0 ]; then
        extra_f="$extra_f,resent_per_lost_byte=$(python3 -c "print(f'{$rb/$lb:.3f}')")"
    fi
}
