# shellcheck shell=bash disable=SC2034 # CEILING_SKIPPED is read by run.sh
# Sourced by tools/bench/run.sh: the machine's ceiling for one QUIC-like bulk flow
# (../shared/ceiling), built and run in the same sitting as the transfers.
#
# Needs from run.sh: REPO, DIR, SIZE, TIMEOUT, die, step. Sets CEILING (the binary) or
# CEILING_SKIPPED (why there is none).

# The datagram size our apps send on loopback once path MTU discovery has probed up to their
# default --max-udp-payload (apps/src/args.rs, DEFAULT_MAX_UDP_PAYLOAD); the ceiling moves the
# same datagrams.
CEILING_DATAGRAM=1452
CEILING_BUILD="$REPO/tools/bench/.build/ceiling"
CEILING="$CEILING_BUILD/target/release/ceiling"
CEILING_SKIPPED=""

# Where the ceiling's sources are: $CEILING_DIR, else ../shared/ceiling beside the repository,
# else /work/shared/ceiling. Prints nothing when none has a Cargo.toml.
ceiling_source() {
    local d
    for d in "${CEILING_DIR:-}" "$REPO/../shared/ceiling" /work/shared/ceiling; do
        [ -n "$d" ] && [ -f "$d/Cargo.toml" ] && [ -d "$d/src" ] && { (cd "$d" && pwd); return; }
    done
}

# Builds the ceiling from a copy of its sources (shared/ is read-only, and cargo writes a lock
# file beside the manifest). Sets CEILING_SKIPPED instead of failing: the transfers go on
# without ratios.
ceiling_build() {
    local src
    src="$(ceiling_source)"
    if [ -z "$src" ]; then
        CEILING_SKIPPED="no ceiling sources (set CEILING_DIR, or put shared/ceiling beside the repository)"
        return
    fi
    step "building the ceiling from $src (release)"
    mkdir -p "$CEILING_BUILD/src"
    cp "$src/Cargo.toml" "$CEILING_BUILD/Cargo.toml"
    cp -R "$src/src/." "$CEILING_BUILD/src/"
    chmod -R u+w "$CEILING_BUILD"
    if ! cargo build --release --quiet --manifest-path "$CEILING_BUILD/Cargo.toml" \
        --target-dir "$CEILING_BUILD/target"; then
        CEILING_SKIPPED="the ceiling did not build (see above)"
    fi
}

# The ceiling's flags for variant $1: ceiling (the sender counts ACKs through a shared
# counter) or ceiling-udp (sealed ACK datagrams over UDP, which the sender reads).
ceiling_flags() {
    case "$1" in
        ceiling) echo "--mode gso --size $CEILING_DATAGRAM" ;;
        ceiling-udp) echo "--mode gso --size $CEILING_DATAGRAM --ack udp" ;;
        *) die "not a ceiling variant: $1" ;;
    esac
}

# The value of key $1 in the RESULT line of file $2.
ceiling_field() {
    grep '^RESULT ' "$2" | tail -n 1 | tr ' ' '\n' | sed -n "s/^$1=//p"
}

# One run of ceiling variant $1, run $2: appends a row to results.tsv in the transfers' columns
# (goodput, wall, receiver CPU as the client's, sender CPU as the server's, peak RSS).
ceiling_transfer() {
    local variant="$1" run="$2" log="$DIR/logs/$1-$2" status=0
    # shellcheck disable=SC2046 # the flags are words
    timeout -k 5 "$TIMEOUT" /usr/bin/time -o "$log.time" -f '%e %U %S %M' \
        "$CEILING" $(ceiling_flags "$variant") --bytes "$SIZE" --label "$variant" \
        >"$log.out" 2>"$log.err" || status=$?
    if [ "$status" != 0 ] || [ "$(ceiling_field ok "$log.out")" != 1 ]; then
        cat "$log.out" "$log.err" >&2
        die "$variant run $run failed (status $status; 124 = over ${TIMEOUT}s)"
    fi
    local gbps wall tx rx rss mbps gib
    gbps="$(ceiling_field gbps "$log.out")"
    wall="$(ceiling_field wall "$log.out")"
    tx="$(ceiling_field tx_cpu "$log.out")"
    rx="$(ceiling_field rx_cpu "$log.out")"
    read -r _ _ _ rss <"$log.time"
    mbps="$(awk -v g="$gbps" 'BEGIN { printf "%.1f", g * 1000 }')"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$variant" "$run" "$mbps" "$wall" "$rx" "$tx" \
        "$rss" 0 >>"$DIR/results.tsv"
    gib="$(awk -v s="$SIZE" 'BEGIN { print s / 1073741824 }')"
    printf '  %-10s run %s: %8s Mbit/s  %6ss  receiver CPU %6ss (%5.2f s/GiB)  sender CPU %6ss (%5.2f s/GiB)  drops %s\n' \
        "$variant" "$run" "$mbps" "$wall" "$rx" "$(awk -v c="$rx" -v g="$gib" 'BEGIN { print c / g }')" \
        "$tx" "$(awk -v c="$tx" -v g="$gib" 'BEGIN { print c / g }')" "$(ceiling_field drops "$log.out")"
}
