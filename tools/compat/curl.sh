#!/usr/bin/env bash
# curl 8.21.0 on our library: quiche's largest C user, built as its docs/HTTP3.md builds it for
# quiche (paths adapted), then run against quiche-server over HTTP/3.
#
# curl's HTTP/3 backend (lib/vquic/cf-quiche.c) creates its own BoringSSL SSL* and hands it to
# quiche_conn_new_with_tls, so it needs our C API with the BoringSSL backend:
#   libquiche (features ffi,pkg-config-meta,qlog,boringssl-boring-crate; `qlog` is on by
#   default and `pkg-config-meta` is accepted as a name: tools/ffi-build.sh writes quiche.pc)
#   from tools/ffi-build.sh --boringssl, or the build in $QUICHE_BORING_LIBDIR when it is set
#   (tools/test.sh sets it to its unoptimized one);
#   curl ./configure --with-openssl=<the BoringSSL of tools/boringssl/build.sh, which that
#   libquiche links> --with-quiche=<the folder of our quiche.pc>, everything optional off.
# The curl build is cached in target/curl (keyed by the tarball, the configure line and
# include/quiche.h); curl links libquiche.so, so a rebuilt library needs no curl rebuild.
#
# Checks (every process under timeout):
#   - curl --http3-only downloads 1 KiB, 10 MiB and 100 MiB from quiche-server: SHA-256 equal,
#     -w '%{http_version}' is 3;
#   - the same from aioquic's and quic-go's HTTP/3 servers (tools/interop/setup.sh installs
#     them; run here when a program is missing);
#   - a POST of 10 MiB: quiche-server answers "SIZE SHA256" of what it received;
#   - 50 files in one `curl --parallel --parallel-max 50` run, over one connection (the
#     transfers' %{num_connects} add up to 1), all 50 SHA-256 checked;
#   - QLOGDIR set: curl writes a qlog per connection, each a JSON-SEQ (RFC 7464) qlog whose
#     records parse as JSON, with a header and transport events;
#   - a server certificate that does not verify (no --cacert; curl is built without a CA
#     bundle) makes curl fail with its TLS error (60 or 35), within its timeout.
#
#   tools/compat/curl.sh [--build-only]
#
# In tools/test.sh on the unoptimized feature libraries its BoringSSL step builds
# (QUICHE_BORING_LIBDIR=target/debug): `--build-only` in the background from that step on, the
# checks in a step of their own. curl's autoreconf + configure + make: 109 s of CPU (163 s of
# wall time on this 2-core machine at load 7 to 9, 19 minutes at load 10 to 20); the checks
# 30 s of CPU (57 s of wall time at load 10).
set -euo pipefail
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
cd "$REPO"
say() { echo "curl: $*"; }
fail() {
    echo "curl: FAIL: $*" >&2
    exit 1
}
# ../shared beside the repository (or beside the worktrees' folder), else /work/shared.
TARBALL="${CURL_TARBALL:-}"
if [ -z "$TARBALL" ]; then
    for dir in "$REPO/../shared" "$REPO/../../shared" /work/shared; do
        TARBALL="$dir/third-party/curl-8.21.0.tar.xz"
        [ -f "$TARBALL" ] && break
    done
fi
[ -f "$TARBALL" ] || fail "no curl source at $TARBALL"
start=$SECONDS

# ---- tools: curl's source is a git checkout, so its build system is generated here.
missing=()
for tool in autoreconf:autoconf automake:automake libtoolize:libtool pkg-config:pkg-config; do
    command -v "${tool%%:*}" >/dev/null 2>&1 || missing+=("${tool#*:}")
done
if [ "${#missing[@]}" -gt 0 ]; then
    say "installing ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# ---- our library with the BoringSSL backend, and that BoringSSL.
eval "$(tools/boringssl/build.sh --env)"
BSSL="$BORING_BSSL_PATH"
if [ -n "${QUICHE_BORING_LIBDIR:-}" ]; then
    LIBDIR="$QUICHE_BORING_LIBDIR"
else
    say "building libquiche with boringssl-boring-crate (tools/ffi-build.sh --boringssl)"
    tools/ffi-build.sh --boringssl >/dev/null
    LIBDIR="$TARGET/ffi-boringssl/release"
fi
for f in libquiche.so quiche.pc; do
    [ -f "$LIBDIR/$f" ] || fail "$LIBDIR/$f is missing (tools/ffi-build.sh --boringssl)"
done
# curl's recipe links libquiche.so.0 next to libquiche.so.
ln -sf libquiche.so "$LIBDIR/libquiche.so.0"

# ---- curl, once.
CURL_DIR="$TARGET/curl"
CONFIGURE=(--with-openssl="$BSSL" --with-quiche="$LIBDIR"
    --disable-shared --enable-static --disable-dependency-tracking --disable-manual
    --disable-docs --disable-ldap --disable-ldaps --disable-rtsp --disable-dict --disable-telnet
    --disable-tftp --disable-pop3 --disable-imap --disable-smb --disable-smtp --disable-gopher
    --disable-mqtt --disable-ftp --disable-ipfs --disable-websockets --disable-ntlm
    --disable-kerberos-auth --disable-negotiate-auth --disable-aws --without-libpsl
    --without-zlib --without-brotli --without-zstd --without-libidn2 --without-nghttp2
    --without-libssh2 --without-libssh --without-ca-bundle --without-ca-path
    --without-ca-fallback --disable-ca-search)
key="$( (sha256sum <"$TARBALL"; echo "${CONFIGURE[*]}"; sha256sum <include/quiche.h) | sha256sum | cut -d' ' -f1)"
CURL="$CURL_DIR/src/src/curl"
if [ ! -x "$CURL" ] || [ "$(cat "$CURL_DIR/key" 2>/dev/null)" != "$key" ]; then
    rm -rf "$CURL_DIR"
    mkdir -p "$CURL_DIR/src"
    tar -C "$CURL_DIR/src" --strip-components=1 -xJf "$TARBALL"
    b0=$SECONDS
    say "autoreconf -fi"
    (cd "$CURL_DIR/src" && autoreconf -fi) >"$CURL_DIR/autoreconf.log" 2>&1 ||
        { tail -n 30 "$CURL_DIR/autoreconf.log" >&2; fail "autoreconf failed"; }
    b1=$SECONDS
    say "configure ${CONFIGURE[*]}"
    # BoringSSL's libssl.a is C++: its link checks need the C++ runtime.
    (cd "$CURL_DIR/src" && LIBS="-lstdc++ -lpthread" PKG_CONFIG_PATH="$LIBDIR" \
        ./configure "${CONFIGURE[@]}") >"$CURL_DIR/configure.log" 2>&1 ||
        { tail -n 40 "$CURL_DIR/configure.log" >&2; fail "configure failed (log: $CURL_DIR/src/config.log)"; }
    grep -q 'HTTP3: *enabled (quiche)' "$CURL_DIR/configure.log" ||
        { tail -n 40 "$CURL_DIR/configure.log" >&2; fail "configure did not enable HTTP/3 with quiche"; }
    b2=$SECONDS
    # Only libcurl and the curl tool: a static build also makes the unit tests' libcurlu.
    say "make (libcurl.la, curl)"
    jobs="${CURL_MAKE_JOBS:-2}"
    (cd "$CURL_DIR/src" && make -j"$jobs" -C lib libcurl.la && make -j"$jobs" -C src curl) >"$CURL_DIR/make.log" 2>&1 ||
        { grep -E 'error|undefined' "$CURL_DIR/make.log" | head -n 40 >&2; fail "make failed (log: $CURL_DIR/make.log)"; }
    echo "$key" >"$CURL_DIR/key"
    say "built in $((SECONDS - b0)) s: autoreconf $((b1 - b0)) s, configure $((b2 - b1)) s, make $((SECONDS - b2)) s"
fi
export LD_LIBRARY_PATH="$LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
timeout 10 "$CURL" --version | head -n 1 | grep -q quiche || fail "curl --version names no quiche"
timeout 10 "$CURL" --version | head -n 2
[ "${1:-}" = --build-only ] && exit 0
built=$SECONDS

# ---- the checks
build_apps
WORK="$(mktemp -d "${TMPDIR:-/tmp}/quiche-curl.XXXXXX")"
cleanup_dir "$WORK"
CERTS=quiche/tests/certs
CA="$CERTS/rootca.crt"
mkdir -p "$WORK/root" "$WORK/out" "$WORK/qlog"
for size in 1K 10M 100M; do
    head -c "$(size_bytes "$size")" /dev/urandom >"$WORK/root/$size.bin"
done
for i in $(seq 1 50); do head -c $((1000 + i * 997)) /dev/urandom >"$WORK/root/p$i.bin"; done
head -c "$(size_bytes 10M)" /dev/urandom >"$WORK/upload.bin"
sha() { sha256sum <"$1" | cut -d' ' -f1; }

start_server "$WORK/server.log" timeout 600 "$TARGET/release/quiche-server" \
    --listen 127.0.0.1:0 --cert "$CERTS/cert.crt" --key "$CERTS/cert.key" --root "$WORK/root" ||
    fail "quiche-server did not start"
BASE="https://localhost:$SERVER_PORT"
# curl resolves localhost itself; pin it to the server's address.
RESOLVE=(--resolve "localhost:$SERVER_PORT:127.0.0.1")
h3curl() { timeout 120 "$CURL" --http3-only --silent --show-error --cacert "$CA" "$@"; }

# download NAME BASE [ARGS...]: GET BASE/NAME, compares it with root/NAME.
download() {
    local name="$1" base="$2" version
    shift 2
    version="$(h3curl "$@" -o "$WORK/out/$name" -w '%{http_version}' "$base/$name")" ||
        fail "GET $base/$name: curl exit status $?"
    [ "$version" = 3 ] || fail "GET $base/$name: http_version $version, not 3"
    [ "$(sha "$WORK/out/$name")" = "$(sha "$WORK/root/$name")" ] ||
        fail "GET $base/$name: SHA-256 differs"
    say "GET $name from $base: HTTP/$version, SHA-256 equal"
}
for size in 1K 10M 100M; do
    t0=$EPOCHREALTIME
    download "$size.bin" "$BASE" "${RESOLVE[@]}"
    say "  $(python3 -c "print(f'{$EPOCHREALTIME - $t0:.2f}')") s"
    rm -f "$WORK/out/$size.bin"
done

# POST of 10 MiB: quiche-server answers "SIZE SHA256\n" (apps/src/http3.rs, uploads).
answer="$(h3curl "${RESOLVE[@]}" --data-binary @"$WORK/upload.bin" "$BASE/upload")" ||
    fail "POST: curl exit status $?"
want="$(stat -c %s "$WORK/upload.bin") $(sha "$WORK/upload.bin")"
[ "$answer" = "$want" ] || fail "POST: answer '$answer', want '$want'"
say "POST 10 MiB: server received $answer"

# 50 files in one parallel run, one connection.
args=()
for i in $(seq 1 50); do args+=(-o "$WORK/out/p$i.bin" "$BASE/p$i.bin"); done
connects="$(h3curl "${RESOLVE[@]}" --parallel --parallel-max 50 -w '%{num_connects} %{http_version}\n' "${args[@]}")" ||
    fail "parallel: curl exit status $?"
[ "$(grep -c ' 3$' <<<"$connects")" = 50 ] || fail "parallel: not 50 HTTP/3 transfers: $connects"
total="$(awk '{n += $1} END {print n}' <<<"$connects")"
[ "$total" = 1 ] || fail "parallel: $total connections, want 1"
for i in $(seq 1 50); do
    [ "$(sha "$WORK/out/p$i.bin")" = "$(sha "$WORK/root/p$i.bin")" ] || fail "parallel: p$i.bin differs"
done
say "parallel: 50 files over 1 connection, SHA-256 equal"

# qlog: curl hands a file in QLOGDIR to quiche_conn_set_qlog_fd.
QLOGDIR="$WORK/qlog" h3curl "${RESOLVE[@]}" -o "$WORK/out/q.bin" "$BASE/1K.bin" ||
    fail "qlog run: curl exit status $?"
python3 - "$WORK/qlog" <<'EOF' || fail "curl's qlog does not parse"
import json, pathlib, sys
files = list(pathlib.Path(sys.argv[1]).iterdir())
assert files, "QLOGDIR holds no file"
for f in files:
    records = [r for r in f.read_text().split("\x1e") if r.strip()]
    assert len(records) > 1, f"{f.name}: {len(records)} records"
    head = json.loads(records[0])
    assert "qlog_version" in head and "trace" in head, f"{f.name}: no qlog header"
    events = [json.loads(r) for r in records[1:]]
    names = {e["name"] for e in events}
    for want in ("transport:packet_sent", "transport:packet_received"):
        assert want in names, f"{f.name}: no {want}"
    print(f"curl: qlog {f.name}: {len(events)} events, every record JSON")
EOF

# A certificate curl cannot verify: no --cacert, and this curl has no CA bundle.
set +e
timeout 60 "$CURL" --http3-only --silent "${RESOLVE[@]}" -o /dev/null "$BASE/1K.bin"
status=$?
set -e
case "$status" in
    60 | 35) say "unverifiable certificate: curl exit status $status (TLS error), no hang" ;;
    124) fail "unverifiable certificate: curl hung (timeout)" ;;
    *) fail "unverifiable certificate: curl exit status $status, want 60 or 35" ;;
esac

# ---- other servers, as tools/interop/run.sh starts them (`PEER server --listen --cert --key
# --root`); tools/interop/setup.sh installs them (tools/test.sh ran it before this).
stop_pid "$SERVER_PID"
if [ ! -x "$INTEROP_BUILD/venv/bin/python" ] || [ ! -x "$INTEROP_BUILD/bin/quic-go-peer" ]; then
    say "installing the interop peers (tools/interop/setup.sh)"
    tools/interop/setup.sh >"$WORK/setup.log" 2>&1 || { tail -n 30 "$WORK/setup.log" >&2; fail "tools/interop/setup.sh failed"; }
fi
for peer in aioquic quic-go; do
    case "$peer" in
        aioquic) cmd=("$INTEROP_BUILD/venv/bin/python" tools/interop/aioquic_peer.py) ;;
        quic-go) cmd=("$INTEROP_BUILD/bin/quic-go-peer") ;;
    esac
    [ -x "${cmd[0]}" ] || fail "$peer's server: ${cmd[0]} is absent after tools/interop/setup.sh"
    port="$(free_port)"
    TESTCASE=http3 start_server "$WORK/$peer.log" timeout 600 "${cmd[@]}" server \
        --listen "127.0.0.1:$port" --cert "$CERTS/cert.crt" --key "$CERTS/cert.key" \
        --root "$WORK/root" || fail "$peer's server did not start"
    for size in 1K 10M 100M; do
        download "$size.bin" "https://localhost:$port" --resolve "localhost:$port:127.0.0.1"
        rm -f "$WORK/out/$size.bin"
    done
    stop_pid "$SERVER_PID"
done

say "all checks passed: build $((built - start)) s, checks $((SECONDS - built)) s"
