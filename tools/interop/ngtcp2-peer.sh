#!/usr/bin/env bash
# ngtcp2 (Debian's ngtcp2-client and ngtcp2-server: gtlsclient/gtlsserver, ngtcp2 with nghttp3
# and GnuTLS) behind the interop runner's common peer interface (see run.sh and README.md):
#
#   ngtcp2-peer.sh server --listen HOST:PORT --cert F --key F --root DIR [--retry] [--keylog F]
#   ngtcp2-peer.sh client (--ca F | --no-verify) --out DIR [--case NAME] [--keylog F] URL...
#
# These example programs speak HTTP/3 only (ALPN h3), so the only case is http3: the client
# answers any other --case with "unsupported" and exit status 127, and so does the server when
# run.sh tells it another case in TESTCASE (the interop runner's variable).
#
# What the wrapper adds to the programs:
# * gtlsclient exits 0 even when the handshake times out or a response is a 404, so the
#   wrapper reads its log: every URL must have had a response with :status 200 on its request
#   stream (the i-th URL on stream 4*i), closed with H3_NO_ERROR (0x100), and a file in --out.
# * gtlsclient does not verify the server's certificate at all (it has no option for it):
#   --ca is accepted and not used.
# * Key logs: GnuTLS writes NSS key-log lines to $SSLKEYLOGFILE.
# * The last line printed is "bytes=N secs=S mbps=M". For the server, N counts the bodies of
#   the 200 responses from gtlsserver's log (content-length) and S is 0: its log has no times.
set -uo pipefail

GTLSCLIENT="$(PATH="$PATH:/usr/bin" command -v gtlsclient || true)"
GTLSSERVER="$(PATH="$PATH:/usr/sbin:/sbin" command -v gtlsserver || true)"

unsupported() { echo unsupported; exit 127; }
die() { echo "ngtcp2-peer: $*" >&2; echo "bytes=0 secs=0.000 mbps=0.00"; exit 1; }
now() { date +%s.%N; }
summary() {  # BYTES SECS
    awk -v b="$1" -v s="$2" 'BEGIN {
        m = (s > 0) ? b * 8 / s / 1e6 : 0
        printf "bytes=%d secs=%.3f mbps=%.2f\n", b, s, m }'
}

role="${1:-}"; shift || true
case "$role" in
server)
    listen="" cert="" key="" root="" keylog="" retry=0
    while [ $# -gt 0 ]; do
        case "$1" in
            --listen) listen="$2"; shift 2 ;;
            --cert) cert="$2"; shift 2 ;;
            --key) key="$2"; shift 2 ;;
            --root) root="$2"; shift 2 ;;
            --keylog) keylog="$2"; shift 2 ;;
            --retry) retry=1; shift ;;
            *) die "server: unknown argument $1" ;;
        esac
    done
    [ -n "${TESTCASE:-}" ] && [ "$TESTCASE" != http3 ] && unsupported
    { [ -n "$listen" ] && [ -n "$cert" ] && [ -n "$key" ] && [ -n "$root" ]; } \
        || die "server: --listen, --cert, --key and --root are required"
    [ -n "$GTLSSERVER" ] || die "gtlsserver not found (Debian package ngtcp2-server; run setup.sh)"
    host="${listen%:*}"; port="${listen##*:}"
    host="${host#[}"; host="${host%]}"
    opts=(--no-quic-dump --no-http-dump -d "$root")
    # -V: address validation, i.e. a Retry for every new connection without a token.
    [ "$retry" = 1 ] && opts+=(-V)
    # run.sh sets INTEROP_NO_GSO while it captures: one datagram per send.
    [ -n "${INTEROP_NO_GSO:-}" ] && opts+=(--max-gso-dgrams=1)
    [ -n "$keylog" ] && export SSLKEYLOGFILE="$keylog"
    log="$(mktemp)"
    "$GTLSSERVER" "${opts[@]}" "$host" "$port" "$key" "$cert" >"$log" 2>&1 &
    pid=$!
    stop() { kill -TERM "$pid" 2>/dev/null; }
    trap stop TERM INT
    echo "ngtcp2: gtlsserver pid $pid listening on $listen retry=$retry" >&2
    wait "$pid"; rc=$?
    # wait returns early when the trap fires: wait again for the program itself.
    kill -0 "$pid" 2>/dev/null && wait "$pid"
    # gtlsserver's HTTP lines, not its per-packet debug output.
    grep -a '^http: \|^HTTP stream\|^\[' "$log" | grep -av '^\[ *[0-9]' >&2
    grep -ai 'error\|fail' "$log" | grep -av '^I[0-9]\|error code 256' | sort | uniq -c | head -n 20 >&2
    bytes="$(awk '/^\[:status: 200\]$/ { ok = 1; next }
                  ok && /^\[content-length: [0-9]+\]$/ { gsub(/[^0-9]/, ""); n += $0; ok = 0 }
                  END { print n + 0 }' "$log")"
    rm -f "$log"
    # Ended by our SIGTERM (143) is the normal end; anything else before that is a failure.
    if [ "$rc" != 0 ] && [ "$rc" != 143 ]; then
        echo "ngtcp2: gtlsserver exited with $rc" >&2
        summary "$bytes" 0; exit 1
    fi
    summary "$bytes" 0
    ;;
client)
    out="" kase=transfer keylog="" urls=()
    while [ $# -gt 0 ]; do
        case "$1" in
            --ca) shift 2 ;;  # gtlsclient never verifies the certificate (see above)
            --no-verify) shift ;;
            --out) out="$2"; shift 2 ;;
            --case) kase="$2"; shift 2 ;;
            --keylog) keylog="$2"; shift 2 ;;
            -*) die "client: unknown argument $1" ;;
            *) urls+=("$1"); shift ;;
        esac
    done
    [ "$kase" = http3 ] || unsupported
    { [ -n "$out" ] && [ "${#urls[@]}" -gt 0 ]; } || die "client: need --out and URLs"
    [ -n "$GTLSCLIENT" ] || die "gtlsclient not found (Debian package ngtcp2-client; run setup.sh)"
    # https://HOST:PORT/path, every URL on the same server.
    authority="${urls[0]#https://}"; authority="${authority%%/*}"
    for u in "${urls[@]}"; do
        a="${u#https://}"; a="${a%%/*}"
        { [ "$u" != "${u#https://}" ] && [ "$a" = "$authority" ]; } || die "client: bad URL $u (all on https://$authority)"
    done
    host="${authority%:*}"; port="${authority##*:}"
    host="${host#[}"; host="${host%]}"
    [ "$port" != "$authority" ] || die "client: URL without a port"
    mkdir -p "$out" || die "cannot create $out"
    [ -n "$keylog" ] && export SSLKEYLOGFILE="$keylog"
    log="$(mktemp)"
    t0="$(now)"
    # gtlsclient runs until every request stream has closed (or its idle timeout, 30 s).
    "$GTLSCLIENT" --no-quic-dump --no-http-dump --exit-on-all-streams-close \
        --download "$out" "$host" "$port" "${urls[@]}" >"$log" 2>&1
    rc=$?
    t1="$(now)"
    grep -a '^http: \|^HTTP stream' "$log" | grep -av 'submit request\|\[:\|user-agent' >&2
    grep -a 'ERR_\|rror' "$log" | grep -av '^I[0-9]\|error code 256' | sort | uniq -c | head -n 20 >&2
    fail=0 total=0 i=0
    for u in "${urls[@]}"; do
        sid=$((4 * i)); i=$((i + 1))
        name="$(basename "${u%%\?*}")"
        if ! grep -aqx "http: stream $(printf '0x%x' "$sid") \[:status: 200\]" "$log"; then
            echo "ngtcp2: $u: no 200 response on stream $sid" >&2; fail=1
        elif ! grep -aqx "HTTP stream $sid closed with error code 256" "$log"; then
            echo "ngtcp2: $u: stream $sid did not close with H3_NO_ERROR" >&2; fail=1
        elif [ ! -f "$out/$name" ]; then
            echo "ngtcp2: $u: no file $out/$name" >&2; fail=1
        else
            total=$((total + $(stat -c %s "$out/$name")))
        fi
    done
    rm -f "$log"
    secs="$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')"
    if [ "$rc" != 0 ] || [ "$fail" != 0 ]; then
        echo "ngtcp2: gtlsclient exit status $rc; failed" >&2
        summary 0 "$secs"; exit 1
    fi
    summary "$total" "$secs"
    ;;
*)
    echo "usage: ngtcp2-peer.sh server|client ..." >&2
    exit 2
    ;;
esac
