# shellcheck shell=bash
# The plumbing every script under tools/ shares. Source it, do not run it:
#
#   . "$(dirname "$0")/lib.sh"          # from tools/; ../lib.sh from a folder below
#
# It sets REPO (the repository's root) and TARGET (cargo's target dir), installs one EXIT trap
# (and INT/TERM traps that exit 130, which runs it), and defines:
#
#   build_apps [PKG...]           cargo build --release -p quiche-apps (and -p PKG...), once
#   build_packages PROFILE PKG... the same for any workspace packages, release or debug
#   build_peer quinn|quic-go      an interop peer program, in tools/interop/.build/bin, once
#   start_server LOG CMD...       CMD in the background, its output in LOG; waits for its
#                                 `listening on ADDR` line; sets SERVER_PID, SERVER_ADDR, SERVER_PORT
#   wait_server                   waits for that server to exit by itself; its status, its log on failure
#   wait_line FILE ERE SECS [PID] waits for a line matching ERE in FILE and prints it
#   port_bound udp|tcp PORT       is a UDP socket bound to PORT (a TCP one listening)?
#   wait_port udp|tcp PORT [SECS] [PID]   waits until it is
#   free_port                     prints a port that nothing uses (UDP or TCP)
#   stop_pid PID [SECS]           SIGTERM, up to SECS (3) to exit, then SIGKILL; reaps it
#   cleanup_pid PID / forget_pid PID     the exit trap stops PID / no longer does
#   cleanup_dir DIR               the exit trap removes DIR
#   at_exit COMMAND               the exit trap runs COMMAND (after stopping the PIDs, before
#                                 removing the folders)
#   size_bytes N[K|M|G]           prints N bytes, the suffixes powers of 1024; fails on anything else
#   start_capture PORT FILE LOG   dumpcap on lo for UDP port PORT into FILE; sets CAP_PID
#   stop_capture                  ends it, without losing its last packets
#
# The functions that set variables or register PIDs must run in the script's own shell, not
# in $(...). Scripts must not install an EXIT trap of their own: at_exit is the hook.

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TARGET="${CARGO_TARGET_DIR:-$REPO/target}"
case "$TARGET" in /*) ;; *) TARGET="$REPO/$TARGET" ;; esac

# ---------------------------------------------------------------------------------- builds

# build_packages PROFILE PKG...: builds the workspace packages (PROFILE release or debug)
# unless this run already did: QUICHE_TOOLS_BUILT, exported, lists the PROFILE:PKG pairs
# built, so that a script run by another script (tools/test.sh, bench/run.sh) does not ask
# cargo again.
build_packages() {
    local profile="$1" pkg args=() missing=()
    shift
    for pkg in "$@"; do
        case " ${QUICHE_TOOLS_BUILT:-} " in
            *" $profile:$pkg "*) ;;
            *) missing+=("$pkg"); args+=(-p "$pkg") ;;
        esac
    done
    [ "${#missing[@]}" -gt 0 ] || return 0
    [ "$profile" = release ] && args+=(--release)
    (cd "$REPO" && cargo build --quiet "${args[@]}") || return 1
    for pkg in "${missing[@]}"; do
        QUICHE_TOOLS_BUILT="${QUICHE_TOOLS_BUILT:-} $profile:$pkg"
    done
    export QUICHE_TOOLS_BUILT
}

# build_apps [PKG...]: quiche-server and quiche-client (release), and the packages named.
# shellcheck disable=SC2120 # the packages are optional
build_apps() {
    build_packages release quiche-apps "$@"
}

# build_peer quinn|quic-go: quinn's or quic-go's interop peer (tools/interop), from crates.io
# or the Go module proxy with the versions pinned in its manifest, into
# tools/interop/.build/bin; once per run, as build_packages. tools/interop/setup.sh installs
# all the peers with it.
INTEROP_BUILD="$REPO/tools/interop/.build"
build_peer() {
    case " ${QUICHE_TOOLS_BUILT:-} " in *" peer:$1 "*) return 0 ;; esac
    mkdir -p "$INTEROP_BUILD/bin"
    case "$1" in
        quinn)
            cargo build --quiet --release --manifest-path "$REPO/tools/interop/quinn-peer/Cargo.toml" \
                --target-dir "$INTEROP_BUILD/quinn-target" || return 1
            install -m 0755 "$INTEROP_BUILD/quinn-target/release/quinn-peer" "$INTEROP_BUILD/bin/quinn-peer"
            ;;
        quic-go)
            # -mod=readonly: go.sum must already hold every hash; a build never edits it.
            # GOTOOLCHAIN=local: never let the go command fetch a toolchain itself.
            (cd "$REPO/tools/interop/quic-go-peer" &&
                GOTOOLCHAIN=local go build -mod=readonly -trimpath -o "$INTEROP_BUILD/bin/quic-go-peer" .) ||
                return 1
            ;;
        *) echo "build_peer: unknown peer $1" >&2; return 2 ;;
    esac
    QUICHE_TOOLS_BUILT="${QUICHE_TOOLS_BUILT:-} peer:$1"
    export QUICHE_TOOLS_BUILT
}

# --------------------------------------------------------------------------- waiting, ports

# lib_now_us: microseconds since the epoch, in LIB_NOW (no subprocess; SECONDS counts whole
# seconds, so a deadline of 1 s on it could pass at once).
lib_now_us() { LIB_NOW="${EPOCHREALTIME/[.,]/}"; }

# wait_line FILE ERE SECS [PID]: waits until FILE has a line matching the extended regular
# expression ERE and prints the first such line. Returns 1 when SECS pass first, 2 when PID
# (if given) exits first. grep reads the file itself (never the end of a pipe: see port_bound).
wait_line() {
    local file="$1" ere="$2" end pid="${4:-}"
    lib_now_us; end=$((LIB_NOW + $3 * 1000000))
    while :; do
        grep -m 1 -E -- "$ere" "$file" 2>/dev/null && return 0
        if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null; then
            # It may have printed the line just before exiting.
            grep -m 1 -E -- "$ere" "$file" 2>/dev/null && return 0
            return 2
        fi
        lib_now_us; [ "$LIB_NOW" -lt "$end" ] || return 1
        sleep 0.05
    done
}

# port_bound udp|tcp PORT: a UDP socket bound to PORT, or a TCP socket listening on it (IPv4
# or IPv6), in this network namespace, or in $NETNS's when it is set (ip netns exec).
port_bound() {
    local proto="$1" hex files=() f
    hex="$(printf ':%04X ' "$2")"
    for f in "/proc/net/$proto" "/proc/net/${proto}6"; do [ -r "$f" ] && files+=("$f"); done
    local netns_cmd=()
    [ -n "${NETNS:-}" ] && netns_cmd=(ip netns exec "$NETNS")
    # awk reads every line: a `grep -q` at the end of a pipe exits at the first match, and
    # under pipefail the writer's SIGPIPE then made the whole check fail (seen on a machine
    # with many sockets: "not listening" for a server that listened, a "free" port in use).
    # State 0A is TCP's LISTEN; any UDP socket counts.
    # shellcheck disable=SC2016 # the awk program's own $2 and $4
    ${netns_cmd[@]+"${netns_cmd[@]}"} awk -v h="$hex" -v tcp="$([ "$proto" = tcp ] && echo 1)" \
        'index($2 " ", h) && (!tcp || $4 == "0A") { found = 1 } END { exit !found }' "${files[@]}"
}

# wait_port udp|tcp PORT [SECS] [PID]: waits up to SECS (10) until port_bound holds; returns 1
# on time-out, 2 when PID (if given) exits first.
wait_port() {
    local end pid="${4:-}"
    lib_now_us; end=$((LIB_NOW + ${3:-10} * 1000000))
    until port_bound "$1" "$2"; do
        [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null && return 2
        lib_now_us; [ "$LIB_NOW" -lt "$end" ] || return 1
        sleep 0.05
    done
}

# free_port: prints a port in 20000-59999 that no UDP socket is bound to and no TCP socket
# listens on. (Another program may still take it before the caller binds it.)
free_port() {
    local p
    for _ in $(seq 1 50); do
        p=$((20000 + RANDOM % 40000))
        port_bound udp "$p" || port_bound tcp "$p" || { echo "$p"; return 0; }
    done
    return 1
}

# size_bytes N[K|M|G]: N bytes, K/M/G (either case) powers of 1024; returns 1 when N is not a
# whole number.
size_bytes() {
    local v="$1" n mult=1
    case "$v" in
        *[kK]) n="${v%?}"; mult=1024 ;;
        *[mM]) n="${v%?}"; mult=$((1024 * 1024)) ;;
        *[gG]) n="${v%?}"; mult=$((1024 * 1024 * 1024)) ;;
        *) n="$v" ;;
    esac
    [[ "$n" =~ ^[0-9]+$ ]] || return 1
    echo $((n * mult))
}

# ----------------------------------------------------------------------- processes, cleanup

LIB_PIDS=()
LIB_DIRS=()
LIB_AT_EXIT=()

cleanup_pid() { LIB_PIDS+=("$1"); }
cleanup_dir() { LIB_DIRS+=("$1"); }
at_exit() { LIB_AT_EXIT+=("$1"); }

forget_pid() {
    local p kept=()
    for p in ${LIB_PIDS[@]+"${LIB_PIDS[@]}"}; do [ "$p" = "$1" ] || kept+=("$p"); done
    LIB_PIDS=(${kept[@]+"${kept[@]}"})
}

# stop_pid PID [SECS]: SIGTERM, then SIGKILL if it is still there after SECS (default 3);
# reaps it (a child of this shell) and takes it off the cleanup list. Returns 0.
stop_pid() {
    local pid="$1" end
    [ -n "$pid" ] || return 0
    lib_now_us; end=$((LIB_NOW + ${2:-3} * 1000000))
    if kill -TERM "$pid" 2>/dev/null; then
        while kill -0 "$pid" 2>/dev/null && lib_now_us && [ "$LIB_NOW" -lt "$end" ]; do sleep 0.05; done
        kill -KILL "$pid" 2>/dev/null || true
    fi
    wait "$pid" 2>/dev/null || true
    forget_pid "$pid"
}

# start_server LOG CMD...: runs CMD in the background with stdout and stderr in LOG and waits
# (SERVER_WAIT seconds, default 30) for its line `listening on ADDR`, as quiche-server, the C
# example servers, tools/relay and the interop peers print it (the peers after their name:
# "quinn: listening on ..."). Sets SERVER_PID (registered for cleanup), SERVER_ADDR and
# SERVER_PORT. On failure it prints why and the end of LOG on stderr, stops CMD and returns 1.
start_server() {
    local log="$1" line rc=0
    shift
    # shellcheck disable=SC2034 # for the caller
    SERVER_ADDR="" SERVER_PORT="" SERVER_LOG="$log"
    # Created before the server starts, so the wait never reads a file it has not opened yet.
    : >"$log"
    "$@" >"$log" 2>&1 &
    SERVER_PID=$!
    cleanup_pid "$SERVER_PID"
    line="$(wait_line "$log" '^([A-Za-z0-9_-]+: )?listening on [^ ]' "${SERVER_WAIT:-30}" "$SERVER_PID")" || rc=$?
    if [ "$rc" != 0 ]; then
        if [ "$rc" = 2 ]; then
            echo "$1 exited before it listened; the end of $log:" >&2
        else
            echo "$1 did not say 'listening on' within ${SERVER_WAIT:-30} s; the end of $log:" >&2
        fi
        tail -n 30 "$log" >&2
        stop_pid "$SERVER_PID"
        SERVER_PID=""
        return 1
    fi
    SERVER_ADDR="${line#*listening on }"
    SERVER_ADDR="${SERVER_ADDR%% *}"
    SERVER_ADDR="${SERVER_ADDR%,}"
    # shellcheck disable=SC2034 # for the caller
    SERVER_PORT="${SERVER_ADDR##*:}"
}

# ---------------------------------------------------------------------------------- captures

# start_capture PORT FILE LOG: dumpcap on lo for UDP port PORT into FILE (its messages in LOG);
# returns once it captures, 1 if it does not start. Sets CAP_PID (registered for cleanup).
start_capture() {
    # A large kernel buffer: at loopback speeds the default one drops packets, and a trace with
    # holes cannot be decrypted past them (truncated packet numbers decode wrongly).
    timeout -k 2 600 dumpcap -q -B 64 -i lo -f "udp port $1" -w "$2" >"$3" 2>&1 &
    CAP_PID=$!
    cleanup_pid "$CAP_PID"
    # Not "Capturing on ...": dumpcap prints that before it opens the interface, and a quick
    # test could be over before the capture starts (seen: a trace with no handshake, or no
    # packet at all). "File: ..." comes once the interface is open, the filter set and the
    # output file created.
    wait_line "$3" '^File: ' 5 "$CAP_PID" >/dev/null && return 0
    stop_pid "$CAP_PID"
    CAP_PID=""
    return 1
}

# stop_capture: ends the capture of the last start_capture, keeping every packet it saw.
stop_capture() {
    [ -n "${CAP_PID:-}" ] || return 0
    # libpcap hands packets over in blocks, at the latest after its read timeout: a capture
    # stopped at once loses the last block, a whole short test included.
    sleep 0.6
    stop_pid "$CAP_PID"
    CAP_PID=""
}

# The shell that sourced this file. A background job signalled before it has exec'd its
# program is still a copy of this shell, with these traps: it must die of the signal, not
# stop this shell's processes and remove its folders.
LIB_SHELL="$BASHPID"

lib_on_signal() {
    [ "$BASHPID" = "$LIB_SHELL" ] && exit 130
    trap - INT TERM EXIT
    kill -"$1" "$BASHPID"
}

# wait_server: waits for the server of the last start_server to exit by itself (one that serves
# one connection, say) and returns its exit status; when that is not 0, prints it and the end
# of its log on stderr.
wait_server() {
    local rc=0
    wait "$SERVER_PID" || rc=$?
    forget_pid "$SERVER_PID"
    if [ "$rc" != 0 ]; then
        echo "the server (PID $SERVER_PID) exited with status $rc; the end of $SERVER_LOG:" >&2
        tail -n 50 "$SERVER_LOG" >&2
    fi
    SERVER_PID=""
    return "$rc"
}

lib_on_exit() {
    local i cmd
    # The newest first: a relay started after its server goes before it.
    for ((i = ${#LIB_PIDS[@]} - 1; i >= 0; i--)); do stop_pid "${LIB_PIDS[$i]}"; done
    for cmd in ${LIB_AT_EXIT[@]+"${LIB_AT_EXIT[@]}"}; do eval "$cmd" || true; done
    for i in ${LIB_DIRS[@]+"${LIB_DIRS[@]}"}; do rm -rf "$i"; done
}
trap '[ "$BASHPID" != "$LIB_SHELL" ] || lib_on_exit' EXIT
trap 'lib_on_signal INT' INT
trap 'lib_on_signal TERM' TERM
