#!/usr/bin/env bash
# Interop matrix: every selected client peer against every selected server peer, for every
# selected test case, on the loopback interface. See README.md in this folder.
#
#   run.sh [--clients LIST] [--servers LIST] [--peers LIST] [--cases LIST] [--timeout SECS]
#          [--wire auto|on|off] [--keep] [--qlog] [--list]
#
# LIST is comma separated. Peers: aioquic, quic-go, quinn, ngtcp2, ours. Cases: handshake, transfer,
# multiplexing, retry, resumption, zerortt, chacha20, keyupdate, versionnegotiation, http3, v2,
# handshakeloss, transferloss, handshakecorruption, transfercorruption, rebind-port, rebind-addr
# (through tools/relay, which drops, corrupts or rebinds datagrams between client and server),
# connectionmigration, blackhole, amplificationlimit (tools/relay too), ipv6. --wire: capture each test on
# lo with dumpcap and check the decrypted trace with tshark (wirecheck.py); auto = when both
# are installed and capturing works. --keep keeps downloads and traces of passed tests. --qlog
# sets QLOGDIR to the test's folder/qlog for both programs (ours and quic-go write qlogs).
# Exit status: 0 when nothing failed (unsupported does not count as a failure), 1 otherwise.
set -uo pipefail
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"

HERE="$REPO/tools/interop"
BUILD="$HERE/.build"
CERTS="$REPO/quiche/tests/certs"
ALL_PEERS="aioquic,quic-go,quinn,ngtcp2"
ALL_CASES="handshake,transfer,multiplexing,retry,resumption,zerortt,chacha20,keyupdate,versionnegotiation,http3,v2,ecn"
ALL_CASES+=",handshakeloss,transferloss,handshakecorruption,transfercorruption"
ALL_CASES+=",rebind-port,rebind-addr,connectionmigration,blackhole,amplificationlimit,ipv6"
RELAY="$TARGET/release/relay"

clients="$ALL_PEERS"
servers="$ALL_PEERS"
cases="$ALL_CASES"
timeout_override=""
keep=0
qlog=0
wire=auto

usage() { sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }

while [ $# -gt 0 ]; do
    case "$1" in
        --clients) clients="$2"; shift 2 ;;
        --servers) servers="$2"; shift 2 ;;
        --peers) clients="$2"; servers="$2"; shift 2 ;;
        --cases) cases="$2"; shift 2 ;;
        --timeout) timeout_override="$2"; shift 2 ;;
        --keep) keep=1; shift ;;
        --qlog) qlog=1; shift ;;
        --wire) wire="$2"; shift 2 ;;
        --list) echo "peers: $ALL_PEERS,ours"; echo "cases: $ALL_CASES"; exit 0 ;;
        -h|--help) usage 0 ;;
        *) echo "run.sh: unknown argument $1" >&2; usage 2 ;;
    esac
done

# ------------------------------------------------------------------------------------------
# Peers. Each is one command taking the common interface:
#   CMD server --listen 127.0.0.1:PORT --cert FILE --key FILE --root DIR [--retry] [--keylog F]
#   CMD client --ca FILE --out DIR --case NAME [--keylog F] URL...
# Both run with TESTCASE=NAME in their environment (as in the interop runner): a server that
# cannot serve a case (ngtcp2 speaks only HTTP/3, quinn only HTTP/0.9) prints "unsupported" and
# exits 127 at once.
# peer_cmd NAME sets the array PEER to that command.

# ==== HOOK: our own peer ("ours") =========================================================
# When our client/server apps exist, make OURS_CMD (or the default below) a command with the
# interface above, e.g. one binary with `server` and `client` subcommands built from this
# workspace, and put its build step in ours_build. Then:
#   tools/interop/run.sh --clients ours --servers aioquic,quic-go,quinn
#   tools/interop/run.sh --clients aioquic,quic-go,quinn --servers ours
OURS_CMD="${OURS_CMD:-$HERE/ours-peer.sh}"
ours_build() {
    build_apps
}
# ==========================================================================================

peer_cmd() {
    case "$1" in
        aioquic) PEER=("$BUILD/venv/bin/python" "$HERE/aioquic_peer.py") ;;
        quic-go) PEER=("$BUILD/bin/quic-go-peer") ;;
        quinn) PEER=("$BUILD/bin/quinn-peer") ;;
        ngtcp2) PEER=("$HERE/ngtcp2-peer.sh") ;;
        ours) read -r -a PEER <<<"$OURS_CMD" ;;
        *) echo "run.sh: unknown peer '$1'" >&2; exit 2 ;;
    esac
}

# ------------------------------------------------------------------------------------------
# Test cases: which files the server holds, and how long the client may take (seconds).
# aioquic moves tens of Mbit/s here, so the limits are generous.

case_timeout() {
    if [ -n "$timeout_override" ]; then echo "$timeout_override"; return; fi
    case "$1" in
        transfer|multiplexing|chacha20|keyupdate|http3) echo 60 ;;
        # The interop runner gives the multiconnect cases 300 s (50 handshakes under 30 % loss).
        handshakeloss|handshakecorruption) echo 300 ;;
        transferloss|transfercorruption|rebind-port|rebind-addr|connectionmigration|blackhole) echo 120 ;;
        amplificationlimit) echo 60 ;;
        *) echo 30 ;;
    esac
}

# The cases that run through tools/relay, and what it does to the datagrams (as the interop
# runner's network simulator: 30 % of the datagrams in each direction dropped or corrupted in
# the handshake cases, 2 % in the transfer cases, at most 3 in a row: without the cap, a
# connection whose every Initial is hit until its idle timeout fails through no fault of its
# endpoints, as seen once; tools/interop/README.md). Empty: no relay.
relay_args() {
    case "$1" in
        handshakeloss) echo "--drop 0.3 --max-burst 3" ;;
        handshakecorruption) echo "--corrupt 0.3 --max-burst 3" ;;
        transferloss) echo "--drop 0.02 --max-burst 3" ;;
        transfercorruption) echo "--corrupt 0.02 --max-burst 3" ;;
        # The runner's NAT rebinds at 1 s, then every 5 s, on a 10 Mbit/s link where 10 MiB
        # take 8 s. Loopback moves them in under a second: a delay and a rebinding every 0.3 s
        # (port; 10 ms each way: with aioquic, more delay and rebinding every 0.25 s left
        # clients silent on closed mappings) or once at 0.2 s (address and port; 15 ms each
        # way, so that a fast server is not done by then), counted from the client's first
        # datagram (an interpreter starts slowly; a rebinding during the handshake ends the
        # connection, RFC 9000 §9), put rebindings inside the transfer.
        rebind-port) echo "--clock-from-first-datagram --delay-ms 10 --rebind-port-every 0.3" ;;
        rebind-addr) echo "--clock-from-first-datagram --delay-ms 15 --rebind-addr-at 0.2" ;;
        # The runner's link works for 5 s, then drops everything for 2 s: mid-transfer of
        # 10 MiB at 10 Mbit/s. On loopback 25 ms each way keeps the transfer in slow start
        # (a few MB at most) when the black-out starts, 0.5 s after the client's first
        # datagram (after the handshake, even for a slow client).
        blackhole) echo "--clock-from-first-datagram --delay-ms 25 --blackhole-at 0.5 --blackhole-for 2" ;;
        # The runner drops the client's datagrams 2 to 7: the server has the first Initial
        # only and must stop at 3x its size until the client gets through again.
        amplificationlimit) echo "--drop-c2s-packets 2-7" ;;
    esac
}

# The case the endpoints are told (TESTCASE, and the client's --case), as in the runner: the
# loss and corruption cases are plain transfers, or "multiconnect" (one connection per file),
# for the network to make hard.
endpoint_case() {
    case "$1" in
        handshakeloss|handshakecorruption) echo multiconnect ;;
        transferloss|transfercorruption|rebind-port|rebind-addr) echo transfer ;;
        blackhole|amplificationlimit|ipv6) echo transfer ;;
        *) echo "$1" ;;
    esac
}

# case_host CASE: the loopback address the server listens on and the client connects to.
case_host() {
    case "$1" in
        ipv6) echo "::1" ;;
        *) echo "127.0.0.1" ;;
    esac
}

# host_port HOST PORT: HOST:PORT, with an IPv6 address in brackets (URLs and --listen).
host_port() {
    case "$1" in
        *:*) echo "[$1]:$2" ;;
        *) echo "$1:$2" ;;
    esac
}

# case_certs CASE: the folder with cert.crt (the chain), cert.key and rootca.crt. The
# amplificationlimit case needs a large chain (bigchain.sh), made once per run.
case_certs() {
    case "$1" in
        amplificationlimit) echo "$RUN/bigchain" ;;
        *) echo "$CERTS" ;;
    esac
}

# relay_problem CASE LOG: prints what is wrong with the relay's counters (nothing when the
# impairment really happened: something dropped, or corrupted, in each direction).
relay_problem() {
    local what n dir total=0
    case "$1" in
        rebind-*)
            n="$(grep "^relay: " "$2" 2>/dev/null | grep -o " rebinds=[0-9]*" | cut -d= -f2)"
            [ "${n:-0}" -gt 0 ] || echo "relay did not rebind"
            return ;;
        amplificationlimit)
            # The client's datagrams 2 to 7: all six dropped (the client sent at least 8).
            n="$(grep "^c2s: " "$2" 2>/dev/null | grep -o " dropped=[0-9]*" | cut -d= -f2)"
            [ "${n:-0}" = 6 ] || echo "relay dropped ${n:-no} client datagrams, expected 6"
            return ;;
        # The black-out fell inside the transfer: it dropped datagrams both ways.
        *loss|blackhole) what=dropped ;;
        *) what=corrupted ;;
    esac
    for dir in c2s s2c; do
        n="$(grep "^$dir: " "$2" 2>/dev/null | grep -o " $what=[0-9]*" | cut -d= -f2)"
        if [ -z "$n" ]; then echo "relay printed no $dir counters"; return; fi
        total=$((total + n))
        # In the transfer cases a client sends a few hundred datagrams (acknowledgments of
        # 2 MiB): at 2 % none may be dropped (seen once); the total must not be zero.
        case "$1" in transfer*) continue ;; esac
        [ "$n" -gt 0 ] || { echo "relay $what nothing $dir"; return; }
    done
    [ "$total" -gt 0 ] || echo "relay $what nothing"
}

rand_file() { head -c "$2" /dev/urandom >"$1"; }
rand_name() { LC_ALL=C tr -dc 'a-zA-Z0-9' </dev/urandom | head -c "$1"; }

# make_files CASE DIR: creates the files to serve, in request order (names listed in DIR/.order).
make_files() {
    local c="$1" dir="$2"
    mkdir -p "$dir"
    : >"$dir/.order"
    add() { rand_file "$dir/$1" "$2"; echo "$1" >>"$dir/.order"; }
    case "$c" in
        handshake|versionnegotiation|v2) add "$(rand_name 10)" 1024 ;;
        transfer) add "$(rand_name 10)" $((2 << 20)); add "$(rand_name 10)" $((3 << 20)) ;;
        multiplexing)
            # More streams than any peer's initial limit (100-128): the client has to wait for
            # MAX_STREAMS. The interop runner uses 1999.
            head -c $((1999 * 32)) /dev/urandom | split -b 32 -a 4 -d - "$dir/mux"
            (cd "$dir" && ls mux* >.order) ;;
        retry) add "$(rand_name 10)" $((10 << 10)) ;;
        # The interop runner's 100 KiB: enough packets after the handshake for a peer that
        # validates ECN only then to acknowledge marked ones.
        ecn) add "$(rand_name 10)" $((100 << 10)) ;;
        resumption) add "$(rand_name 10)" $((5 << 10)); add "$(rand_name 10)" $((10 << 10)) ;;
        zerortt)
            # Long names make the requests large, as in the interop runner.
            for _ in $(seq 1 40); do add "$(rand_name 250)" 32; done ;;
        chacha20|keyupdate) add "$(rand_name 10)" $((3 << 20)) ;;
        # 50 files of 1 KiB, each on a connection of its own (the runner's multiconnect).
        handshakeloss|handshakecorruption) for _ in $(seq 1 50); do add "$(rand_name 10)" 1024; done ;;
        transferloss|transfercorruption|connectionmigration) add "$(rand_name 10)" $((2 << 20)) ;;
        # rebind-port: 30 MiB, so that even a fast pair (ours -> quic-go moved 10 MiB in 0.25 s
        # on a quiet machine, before the first rebinding at 0.3 s) sees at least two rebindings.
        rebind-port) add "$(rand_name 10)" $((30 << 20)) ;;
        rebind-addr|blackhole) add "$(rand_name 10)" $((10 << 20)) ;;
        amplificationlimit) add "$(rand_name 10)" $((5 << 10)) ;;
        ipv6) add "$(rand_name 10)" $((5 << 10)); add "$(rand_name 10)" $((10 << 10)) ;;
        http3)
            # HTTP/3 (ALPN h3), all requests at once on one connection. The interop runner
            # asks for 5, 10 and 500 KiB; a small file and a 5 MiB one are added here.
            add "$(rand_name 10)" 1024; add "$(rand_name 10)" $((5 << 10))
            add "$(rand_name 10)" $((10 << 10)); add "$(rand_name 10)" $((500 << 10))
            add "$(rand_name 10)" $((5 << 20)) ;;
        *) echo "run.sh: unknown case '$c'" >&2; exit 2 ;;
    esac
    (cd "$dir" && xargs sha256sum -- <.order >.sha256)
}

# ------------------------------------------------------------------------------------------
# Processes: everything runs under `timeout`, is registered with lib.sh's cleanup and is ended
# by its PID (stop_pid).

SERVER_PID=""
CAP_PID=""
RELAY_PID=""
HOLD_PID=""

# hold_ipv4_port PORT SECS: keeps 127.0.0.1:PORT bound (HOLD_PID) while an ipv6 test runs. The
# server holds only [::1]:PORT, and the kernel may give the same port number to another
# program's IPv4 socket: the capture ("udp port PORT") then holds that program's traffic too
# (seen: a stranger's handshake and Retry, two handshakes and three IPv4 datagrams).
hold_ipv4_port() {
    timeout -k 2 "$2" python3 -c 'import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", int(sys.argv[1])))
time.sleep(86400)' "$1" >/dev/null 2>&1 &
    HOLD_PID=$!
    cleanup_pid "$HOLD_PID"
}

# run_client_multi T DIR CMD... -- URL...: the multiconnect client: one client process (one
# connection) per URL, up to 10 at a time, all within T seconds; returns 127 if the client
# said unsupported, else the first failure's status (124 when the time ran out), else 0. Key
# logs go to DIR/client.keys.N, then all into DIR/client.keys.
run_client_multi() {
    local t="$1" dir="$2"; shift 2
    local -a cmd=() urls=() pids=()
    while [ "$1" != -- ]; do cmd+=("$1"); shift; done
    shift
    urls=("$@")
    local end=$((SECONDS + t)) i=0 rc=0 r left p f
    : >"$dir/client.log"
    while [ "$i" -lt "${#urls[@]}" ]; do
        pids=()
        for _ in $(seq 1 10); do
            [ "$i" -lt "${#urls[@]}" ] || break
            left=$((end - SECONDS))
            [ "$left" -gt 0 ] || { rc=124; break; }
            TESTCASE=multiconnect timeout -k 2 "$left" "${cmd[@]}" client --ca "$CERTS/rootca.crt" \
                --out "$dir/downloads" --case handshake --keylog "$dir/client.keys.$i" \
                "${urls[$i]}" >"$dir/client.$i.log" 2>&1 &
            pids+=($!)
            cleanup_pid "$!"
            i=$((i + 1))
        done
        for p in ${pids[@]+"${pids[@]}"}; do
            wait "$p"; r=$?
            forget_pid "$p"
            [ "$rc" = 0 ] && rc=$r
        done
        [ "$rc" = 0 ] || break
    done
    for f in "$dir"/client.[0-9]*.log; do
        [ -e "$f" ] && { echo "== $f"; cat "$f"; } >>"$dir/client.log"
    done
    cat "$dir"/client.keys.* >"$dir/client.keys" 2>/dev/null
    if [ "$rc" = 127 ] && grep -qx unsupported "$dir/client.0.log" 2>/dev/null; then
        echo unsupported >>"$dir/client.log"
    fi
    return "$rc"
}

# wire_ok: can this machine capture on lo and decrypt QUIC with tshark?
wire_ok() {
    local f
    command -v dumpcap >/dev/null && command -v tshark >/dev/null && command -v python3 >/dev/null \
        || return 1
    f="$(mktemp -d)"
    start_capture 9 "$f/probe.pcapng" "$f/probe.log"
    local rc=$?
    [ -n "$CAP_PID" ] && { stop_pid "$CAP_PID"; CAP_PID=""; }
    rm -rf "$f"
    return "$rc"
}

# run_one CLIENT SERVER CASE DIR: sets VERDICT to "RESULT DETAIL". It runs in this shell, not
# in a subshell, so that the EXIT trap knows the PIDs to end if the run is interrupted.
VERDICT=""
run_one() {
    local client="$1" server="$2" c="$3" dir="$4" www="$WWW/$3" port t rc ec rport="" seed
    local host certs
    host="$(case_host "$c")"
    certs="$(case_certs "$c")"
    local -a scmd ccmd extra=() urls=() rargs=()
    ec="$(endpoint_case "$c")"
    read -r -a rargs <<<"$(relay_args "$c")"
    mkdir -p "$dir/downloads"
    port="$(free_port)" || { VERDICT="fail no-free-port"; return; }
    peer_cmd "$server"; scmd=("${PEER[@]}")
    peer_cmd "$client"; ccmd=("${PEER[@]}")
    [ "$c" = retry ] && extra=(--retry)
    t="$(case_timeout "$c")"
    if [ "$qlog" = 1 ]; then export QLOGDIR="$dir/qlog"; else unset QLOGDIR; fi

    # (A hold left by a test that ended early is released here.)
    [ -n "$HOLD_PID" ] && { stop_pid "$HOLD_PID"; HOLD_PID=""; }
    [ "$c" = ipv6 ] && hold_ipv4_port "$port" $((t + 30))
    if [ "$WIRE" = 1 ] && ! start_capture "$port" "$dir/trace.pcapng" "$dir/dumpcap.log"; then
        VERDICT="fail capture-did-not-start"; return
    fi
    TESTCASE="$ec" timeout -k 2 $((t + 20)) "${scmd[@]}" server --listen "$(host_port "$host" "$port")" \
        --cert "$certs/cert.crt" --key "$certs/cert.key" --root "$www" \
        --keylog "$dir/server.keys" ${extra[@]+"${extra[@]}"} >"$dir/server.log" 2>&1 &
    SERVER_PID=$!
    cleanup_pid "$SERVER_PID"
    wait_port udp "$port" 10 "$SERVER_PID"; rc=$?
    if [ "$rc" = 2 ]; then
        wait "$SERVER_PID"; rc=$?
        forget_pid "$SERVER_PID"; SERVER_PID=""
        [ -n "$CAP_PID" ] && { stop_pid "$CAP_PID"; CAP_PID=""; }
        if [ "$rc" = 127 ] && grep -qx unsupported "$dir/server.log"; then
            VERDICT="unsupported server-exit-127"
        else
            VERDICT="fail server-exit-$rc"
        fi
        return
    elif [ "$rc" != 0 ]; then
        stop_pid "$SERVER_PID"; SERVER_PID=""
        [ -n "$CAP_PID" ] && { stop_pid "$CAP_PID"; CAP_PID=""; }
        VERDICT="fail server-not-listening"; return
    fi

    # The relay cases: the client talks to the relay, which forwards to the server. The
    # capture (on the server's port) is the server-side trace, as the runner's.
    if [ "${#rargs[@]}" -gt 0 ]; then
        rport="$(free_port)" || { VERDICT="fail no-free-port"; return; }
        seed=$((RANDOM * 32768 + RANDOM))
        timeout -k 2 $((t + 30)) "$RELAY" --listen "127.0.0.1:$rport" --server "127.0.0.1:$port" \
            --seed "$seed" "${rargs[@]}" >"$dir/relay.log" 2>&1 &
        RELAY_PID=$!
        cleanup_pid "$RELAY_PID"
        wait_port udp "$rport" 5 "$RELAY_PID"
    fi
    while read -r name; do urls+=("https://$(host_port "$host" "${rport:-$port}")/$name"); done <"$www/.order"
    if [ "$ec" = multiconnect ]; then
        run_client_multi "$t" "$dir" "${ccmd[@]}" -- "${urls[@]}"
    else
        TESTCASE="$ec" timeout -k 2 "$t" "${ccmd[@]}" client --ca "$certs/rootca.crt" --out "$dir/downloads" \
            --case "$ec" --keylog "$dir/client.keys" "${urls[@]}" >"$dir/client.log" 2>&1
    fi
    rc=$?
    # The server stops before the relay, so that the relay sees (and counts) all it sends.
    stop_pid "$SERVER_PID"; SERVER_PID=""
    [ -n "$RELAY_PID" ] && { stop_pid "$RELAY_PID"; RELAY_PID=""; }
    [ -n "$HOLD_PID" ] && { stop_pid "$HOLD_PID"; HOLD_PID=""; }
    stop_capture

    local mbps rproblem=""
    [ -n "$rport" ] && rproblem="$(relay_problem "$c" "$dir/relay.log")"
    mbps="$(grep -o 'mbps=[0-9.]*' "$dir/client.log" | tail -n 1 | cut -d= -f2)"
    if [ "$rc" = 127 ] && grep -qx unsupported "$dir/client.log"; then
        VERDICT="unsupported client-exit-127"
    elif [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
        VERDICT="fail timeout-${t}s"
    elif [ "$rc" != 0 ]; then
        VERDICT="fail client-exit-$rc"
    elif ! (cd "$dir/downloads" && sha256sum --quiet --strict -c "$www/.sha256" >/dev/null 2>&1); then
        VERDICT="fail files-differ"
    elif [ "$(find "$dir/downloads" -type f | wc -l)" != "$(wc -l <"$www/.order")" ]; then
        VERDICT="fail extra-files"
    elif [ -n "$rproblem" ]; then
        VERDICT="fail $rproblem"
    elif [ "$WIRE" = 1 ] && ! grep -q '^SERVER_HANDSHAKE_TRAFFIC_SECRET ' "$dir/client.keys" 2>/dev/null; then
        VERDICT="fail client-wrote-no-key-log"
    elif [ "$WIRE" = 1 ] && ! grep -q '^SERVER_HANDSHAKE_TRAFFIC_SECRET ' "$dir/server.keys" 2>/dev/null; then
        VERDICT="fail server-wrote-no-key-log"
    elif [ "$WIRE" = 1 ] && ! {
        cat "$dir/client.keys" "$dir/server.keys" >"$dir/keys.log" 2>/dev/null
        # Our own peer is held to a clean dissection: no malformed packet, no expert warning.
        strict=()
        [ "$client" = ours ] || [ "$server" = ours ] && strict=(--strict)
        # Relay cases: one handshake per file in multiconnect, and the trace must agree with
        # the relay's counters.
        [ -n "$rport" ] && strict+=(--relay-log "$dir/relay.log")
        [ "$ec" = multiconnect ] && strict+=(--handshakes "$(wc -l <"$www/.order")")
        python3 "$HERE/wirecheck.py" --pcap "$dir/trace.pcapng" --keylog "$dir/keys.log" \
            --port "$port" --case "$c" --requests "$(wc -l <"$www/.order")" "${strict[@]}" \
            >"$dir/wire.log" 2>&1
    }; then
        VERDICT="fail wire: $(sed -n 2p "$dir/wire.log")"
    else
        VERDICT="pass ${mbps:+mbps=$mbps}"
    fi
}

# ------------------------------------------------------------------------------------------

IFS=, read -r -a CLIENTS <<<"$clients"
IFS=, read -r -a SERVERS <<<"$servers"
IFS=, read -r -a CASES <<<"$cases"

# peer_installed NAME: is what the peer's command runs there? (ngtcp2's is a wrapper script
# around Debian's programs.)
peer_installed() {
    case "$1" in
        ngtcp2) command -v gtlsclient >/dev/null && PATH="$PATH:/usr/sbin" command -v gtlsserver >/dev/null ;;
        *) peer_cmd "$1"; [ -x "${PEER[0]}" ] ;;
    esac
}

# Install what is missing (setup.sh is idempotent and quick when all is there).
need_setup=0
for p in "${CLIENTS[@]}" "${SERVERS[@]}"; do
    [ "$p" = ours ] && continue
    peer_installed "$p" || need_setup=1
done
if [ "$need_setup" = 1 ]; then
    "$HERE/setup.sh" || { echo "run.sh: setup.sh failed" >&2; exit 1; }
fi
for c in "${CASES[@]}"; do
    if [ -n "$(relay_args "$c")" ]; then
        build_packages release relay || { echo "run.sh: building tools/relay failed" >&2; exit 1; }
        break
    fi
done
for p in "${CLIENTS[@]}" "${SERVERS[@]}"; do
    if [ "$p" = ours ]; then ours_build; fi
    peer_cmd "$p"
    [ -x "${PEER[0]}" ] || { echo "run.sh: peer $p: ${PEER[0]} is not executable" >&2; exit 1; }
    [ "$p" = ours ] || peer_installed "$p" || { echo "run.sh: peer $p is not installed" >&2; exit 1; }
done

case "$wire" in
    on) wire_ok || { echo "run.sh: --wire on, but capturing on lo with dumpcap/tshark fails" >&2; exit 1; }
        WIRE=1 ;;
    off) WIRE=0 ;;
    auto) if wire_ok; then WIRE=1; else WIRE=0; echo "run.sh: no dumpcap/tshark capture: wire checks off"; fi ;;
    *) echo "run.sh: --wire auto|on|off" >&2; exit 2 ;;
esac

# Peers that batch datagrams with GSO must not while we capture (see README.md).
[ "$WIRE" = 1 ] && export INTEROP_NO_GSO=1

RUN="$BUILD/runs/$(date +%Y%m%d-%H%M%S)-$$"
WWW="$RUN/www"
mkdir -p "$RUN"
for c in "${CASES[@]}"; do
    make_files "$c" "$WWW/$c"
    if [ "$c" = amplificationlimit ]; then
        "$HERE/bigchain.sh" "$(case_certs "$c")" || { echo "run.sh: bigchain.sh failed" >&2; exit 1; }
    fi
done
echo "run.sh: logs in $RUN; wire checks $([ "$WIRE" = 1 ] && echo on || echo off)"

declare -A RESULT
npass=0 nfail=0 nunsup=0
start_all=$SECONDS
for c in "${CASES[@]}"; do
    for s in "${SERVERS[@]}"; do
        for cl in "${CLIENTS[@]}"; do
            dir="$RUN/$c/$cl--$s"
            t0=$SECONDS
            run_one "$cl" "$s" "$c" "$dir"
            out="$VERDICT"
            verdict="${out%% *}"
            RESULT["$c|$cl|$s"]="$verdict"
            case "$verdict" in
                pass) npass=$((npass + 1))
                    [ "$keep" = 1 ] || rm -rf "$dir/downloads" "$dir/trace.pcapng" ;;
                unsupported) nunsup=$((nunsup + 1)) ;;
                *) nfail=$((nfail + 1)) ;;
            esac
            printf '%-18s %-8s -> %-8s %-12s %3ss  %s\n' "$c" "$cl" "$s" "$verdict" \
                $((SECONDS - t0)) "${out#* }"
            printf '%s\t%s\t%s\t%s\t%s\n' "$c" "$cl" "$s" "$verdict" "${out#* }" >>"$RUN/results.tsv"
        done
    done
done
[ "$keep" = 1 ] || rm -rf "$WWW"

echo
echo "Matrix (rows: client, columns: server)"
for c in "${CASES[@]}"; do
    # A long case name gets a line of its own, so that the columns stay aligned.
    if [ "${#c}" -lt 14 ]; then printf '\n%-14s' "$c"; else printf '\n%s\n%-14s' "$c" ""; fi
    for s in "${SERVERS[@]}"; do printf '%-12s' "$s"; done
    echo
    for cl in "${CLIENTS[@]}"; do
        printf '  %-12s' "$cl"
        for s in "${SERVERS[@]}"; do printf '%-12s' "${RESULT["$c|$cl|$s"]}"; done
        echo
    done
done
echo
echo "total time: $((SECONDS - start_all))s; logs: $RUN"
echo "interop: $npass passed, $nfail failed, $nunsup skipped"
[ "$nfail" = 0 ]
