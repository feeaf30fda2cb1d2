#!/usr/bin/env bash
# CI check of the C API (include/quiche.h, libquiche.a, libquiche.so, quiche/examples):
#
#  1. clippy and the unit tests of the `ffi` feature (not with FFI_CHECK_SKIP_RUST_TESTS=1:
#     tools/test.sh runs them in its own steps);
#  2. the libraries and quiche.pc build (tools/ffi-build.sh);
#  3. the header compiles on its own as C89, C99, C11, C++98, C++11 and C++17;
#  4. the header and the libraries agree: every function declared in quiche.h is exported by
#     libquiche.so and libquiche.a, and every exported quiche_* symbol is declared; except
#     quiche's BoringSSL-only functions (BORING_ONLY below), which only a library built with
#     the `boringssl-boring-crate` feature exports: the default build must not, and a feature
#     build of this run (`tools/ffi-build.sh --boringssl`, named by QUICHE_BORING_LIBDIR) must
#     export exactly what the header declares;
#  5. the examples build with -Wall -Wextra -Werror (also through pkg-config), null_test
#     (NULL in every required pointer argument), api_test (a client and a server joined in
#     memory: streams, DATAGRAM, qlog, resumption, close) and cpp_smoke pass;
#  6. interop over loopback UDP, SHA-256 checked: the C client downloads 5 MiB from the Rust
#     quiche-server (with its default Retry and with --no-retry), the Rust quiche-client
#     downloads 5 MiB from the C server (one connection with two streams, then three
#     connections at once), and the C server answers an unknown version with Version
#     Negotiation;
#  7. HTTP/3: the C HTTP/3 client (examples/http3-client.c) downloads from quiche-server and
#     from the C HTTP/3 server (examples/http3-server.c), which also serves quiche-client;
#  8. valgrind: null_test, api_test, and one full connection each of the C server, the C
#     client, the C HTTP/3 server and the C HTTP/3 client (5 MiB), with no leak and no invalid
#     access.
#
# Every process runs under `timeout`; background servers are ended by their PID. Exits
# non-zero at the first failure. Installs valgrind, a C/C++ toolchain and pkg-config with
# apt-get when missing.
set -euo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"
cd "$REPO"
ROOT="$REPO"

step() { printf '\n== %s\n' "$*"; }
fail() {
    echo "ffi-check: $*" >&2
    exit 1
}

WORK="$(mktemp -d "${TMPDIR:-/tmp}/quiche-ffi.XXXXXX")"
cleanup_dir "$WORK"

step "tools"
missing=()
command -v valgrind >/dev/null 2>&1 || missing+=(valgrind)
command -v cc >/dev/null 2>&1 || missing+=(gcc)
command -v c++ >/dev/null 2>&1 || missing+=(g++)
command -v make >/dev/null 2>&1 || missing+=(make)
command -v pkg-config >/dev/null 2>&1 || missing+=(pkg-config)
command -v nm >/dev/null 2>&1 || missing+=(binutils)
command -v python3 >/dev/null 2>&1 || missing+=(python3)
if [ "${#missing[@]}" -gt 0 ]; then
    echo "installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq "${missing[@]}" >/dev/null
fi
valgrind --version
cc --version | head -n 1

if [ "${FFI_CHECK_SKIP_RUST_TESTS:-0}" = 1 ]; then
    # tools/test.sh runs them in its own cargo clippy/test steps, on both TLS backends.
    step "clippy and unit tests with the ffi feature: skipped (FFI_CHECK_SKIP_RUST_TESTS=1)"
else
    step "clippy and unit tests with the ffi feature"
    cargo clippy --quiet -p quiche --features ffi --all-targets -- -D warnings
    cargo test --quiet -p quiche --features ffi --lib ffi::
fi

step "libquiche.a, libquiche.so, quiche.pc"
tools/ffi-build.sh
LIBDIR="$TARGET/release"
HEADER="$ROOT/include/quiche.h"

step "the header compiles alone as C and C++"
printf '#include <quiche.h>\nint quiche_header_compiles;\n' >"$WORK/h.c"
cp "$WORK/h.c" "$WORK/h.cpp"
for std in c89 c99 c11; do
    # POSIX for struct timespec and socklen_t; -pedantic catches what C89 lacks.
    cc -std="$std" -D_POSIX_C_SOURCE=200809L -pedantic -Wall -Wextra -Werror \
        -I"$ROOT/include" -fsyntax-only "$WORK/h.c" || fail "quiche.h is not valid $std"
done
for std in c++98 c++11 c++17; do
    c++ -std="$std" -pedantic -Wall -Wextra -Werror -I"$ROOT/include" -fsyntax-only \
        "$WORK/h.cpp" || fail "quiche.h is not valid $std"
done
if grep -n '//' "$HEADER" | grep -v '"[^"]*//[^"]*"' >/dev/null; then
    fail "quiche.h uses // comments (C89 has none)"
fi
echo "ok"

step "the header and the libraries declare and export the same functions"
# Declarations: every `quiche_name(` outside comments and string literals.
python3 - "$HEADER" >"$WORK/declared" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
text = re.sub(r'/\*.*?\*/', ' ', text, flags=re.S)
text = re.sub(r'"(\\.|[^"\\])*"', '""', text)
names = set(re.findall(r'\b(quiche_[a-z0-9_]+)\s*\(', text))
print("\n".join(sorted(names)))
PY
nm -D --defined-only "$LIBDIR/libquiche.so" | awk '$2 == "T" {print $3}' | grep '^quiche_' |
    LC_ALL=C sort -u >"$WORK/exported_so"
nm --defined-only "$LIBDIR/libquiche.a" 2>/dev/null | awk '$2 == "T" {print $3}' |
    grep '^quiche_' | LC_ALL=C sort -u >"$WORK/exported_a"
[ -s "$WORK/declared" ] || fail "no declarations found in quiche.h"
# Declared as quiche 0.30 declares them, exported only with the boringssl-boring-crate feature
# (quiche's BoringSSL-only C API: the application's own SSL *, ticket keys).
BORING_ONLY="quiche_config_set_ticket_key
quiche_conn_new_with_tls
quiche_conn_new_with_tls_and_client_dcid"
printf '%s\n' "$BORING_ONLY" | LC_ALL=C sort >"$WORK/boring_only"
LC_ALL=C comm -13 "$WORK/declared" "$WORK/boring_only" | grep . &&
    fail "BORING_ONLY names functions that quiche.h does not declare"
LC_ALL=C comm -23 "$WORK/declared" "$WORK/boring_only" >"$WORK/declared_default"
# agree DECLARED EXPORTED WHAT: the two lists are the same, or the differences are shown.
agree() {
    diff -u "$1" "$2" >"$WORK/diff" && return 0
    echo "declared in quiche.h (-) vs exported by $3 (+):" >&2
    grep '^[-+]quiche_' "$WORK/diff" >&2 || true
    return 1
}
ok=1
for lib in so a; do
    agree "$WORK/declared_default" "$WORK/exported_$lib" "libquiche.$lib" || ok=0
done
if [ -n "${QUICHE_BORING_LIBDIR:-}" ]; then
    for lib in so a; do
        [ -f "$QUICHE_BORING_LIBDIR/libquiche.$lib" ] ||
            fail "QUICHE_BORING_LIBDIR: no $QUICHE_BORING_LIBDIR/libquiche.$lib"
    done
    nm -D --defined-only "$QUICHE_BORING_LIBDIR/libquiche.so" | awk '$2 == "T" {print $3}' |
        grep '^quiche_' | LC_ALL=C sort -u >"$WORK/boring_so"
    nm --defined-only "$QUICHE_BORING_LIBDIR/libquiche.a" 2>/dev/null |
        awk '$2 == "T" {print $3}' | grep '^quiche_' | LC_ALL=C sort -u >"$WORK/boring_a"
    for lib in so a; do
        agree "$WORK/declared" "$WORK/boring_$lib" \
            "libquiche.$lib with boringssl-boring-crate" || ok=0
    done
fi
[ "$ok" = 1 ] || fail "quiche.h and the libraries disagree"
echo "$(wc -l <"$WORK/declared_default") functions declared and exported by the default build"
if [ -n "${QUICHE_BORING_LIBDIR:-}" ]; then
    echo "$(wc -l <"$WORK/declared") declared and exported with boringssl-boring-crate" \
        "($QUICHE_BORING_LIBDIR)"
else
    echo "BoringSSL-only, not exported by the default build; no feature build in this run" \
        "(QUICHE_BORING_LIBDIR) to check them against: $(tr '\n' ' ' <"$WORK/boring_only")"
fi

step "examples (-Wall -Wextra -Werror)"
EX="$ROOT/quiche/examples"
BUILD="$WORK/build"
make --no-print-directory -C "$EX" BUILD_DIR="$BUILD" QUICHE_LIB_DIR="$LIBDIR" all
# The same C++ program built the way the README shows, through pkg-config.
PKG_CONFIG_PATH="$LIBDIR" pkg-config --exists quiche || fail "pkg-config does not find quiche.pc"
# shellcheck disable=SC2046
c++ -std=c++17 -Wall -Wextra -Werror -o "$BUILD/cpp_smoke_pc" "$EX/cpp_smoke.cpp" \
    $(PKG_CONFIG_PATH="$LIBDIR" pkg-config --cflags --libs quiche) -Wl,-rpath,"$LIBDIR"
timeout 60 "$BUILD/null_test"
timeout 60 "$BUILD/api_test" "$WORK/api_test.sqlog"
timeout 60 "$BUILD/cpp_smoke"
LD_LIBRARY_PATH="$LIBDIR" timeout 60 "$BUILD/cpp_smoke_pc"

step "interop with the Rust apps (5 MiB, SHA-256 checked)"
build_apps
BIN="$TARGET/release"
CERT=quiche/tests/certs/cert.crt
KEY=quiche/tests/certs/cert.key
CA=quiche/tests/certs/rootca.crt
mkdir -p "$WORK/root" "$WORK/out"
head -c $((5 * 1024 * 1024)) /dev/urandom >"$WORK/root/file.bin"
head -c $((1024 * 1024 + 17)) /dev/urandom >"$WORK/root/second.bin"
want="$(sha256sum <"$WORK/root/file.bin" | cut -d' ' -f1)"

check_sha() { # FILE WANT
    local got
    [ -f "$1" ] || fail "$1 was not written"
    got="$(sha256sum <"$1" | cut -d' ' -f1)"
    [ "$got" = "$2" ] || fail "SHA-256 mismatch for $1: want $2, got $got"
}

# Starts a server in the background (its output in WORK/NAME.log); it must say
# `listening on ADDR`. Sets PORT.
start_named_server() { # NAME COMMAND...
    local name="$1"
    shift
    start_server "$WORK/$name.log" "$@" || fail "$name did not start"
    PORT="$SERVER_PORT"
}

for retry in "" "--no-retry"; do
    echo "-- C client <- quiche-server ${retry:-(Retry)}"
    start_named_server quiche-server timeout 120 "$BIN/quiche-server" --listen 127.0.0.1:0 \
        --cert "$CERT" --key "$KEY" --root "$WORK/root" $retry
    rm -f "$WORK/out/c.bin"
    timeout 60 "$BUILD/client" -c "$CA" -o "$WORK/out/c.bin" 127.0.0.1 "$PORT" /file.bin ||
        fail "the C client failed against quiche-server ${retry}"
    stop_pid "$SERVER_PID"
    check_sha "$WORK/out/c.bin" "$want"
done

echo "-- quiche-client <- C server: two streams on one connection, then three connections"
start_named_server c-server timeout 120 "$BUILD/server" -c "$CERT" -k "$KEY" -r "$WORK/root" -p 0
rm -rf "$WORK/out"/*
timeout 60 "$BIN/quiche-client" --http09 --ca "$CA" --dump-responses "$WORK/out" \
    "https://127.0.0.1:$PORT/file.bin" "https://127.0.0.1:$PORT/second.bin" ||
    fail "quiche-client failed against the C server"
check_sha "$WORK/out/file.bin" "$want"
check_sha "$WORK/out/second.bin" "$(sha256sum <"$WORK/root/second.bin" | cut -d' ' -f1)"
pids=()
for i in 1 2 3; do
    mkdir -p "$WORK/out/$i"
    timeout 60 "$BIN/quiche-client" --http09 --ca "$CA" --dump-responses "$WORK/out/$i" \
        "https://127.0.0.1:$PORT/file.bin" >"$WORK/out/$i.log" 2>&1 &
    pids+=($!)
done
for i in 1 2 3; do
    wait "${pids[$((i - 1))]}" || { cat "$WORK/out/$i.log" >&2; fail "parallel client $i failed"; }
    check_sha "$WORK/out/$i/file.bin" "$want"
done

echo "-- C server answers an unknown version with Version Negotiation"
timeout 20 python3 - "$PORT" <<'PY' || fail "no Version Negotiation from the C server"
import socket, sys
port = int(sys.argv[1])
dcid, scid = bytes([0xdd] * 8), bytes([0x55] * 8)
pkt = bytes([0xc0]) + bytes.fromhex("1a2a3a4a") + bytes([8]) + dcid + bytes([8]) + scid
pkt += bytes(1200 - len(pkt))
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(5)
s.sendto(pkt, ("127.0.0.1", port))
vn, _ = s.recvfrom(2048)
# Long header, version 0, the IDs swapped, and QUIC v1 among the versions offered.
assert vn[0] & 0x80 and vn[1:5] == bytes(4), vn[:8].hex()
assert vn[5] == 8 and vn[6:14] == scid and vn[14] == 8 and vn[15:23] == dcid, vn[:23].hex()
versions = [vn[i:i + 4] for i in range(23, len(vn), 4)]
assert bytes.fromhex("00000001") in versions, versions
print("Version Negotiation offers", ", ".join(v.hex() for v in versions))
PY
stop_pid "$SERVER_PID"

step "HTTP/3 over the C API (5 MiB, SHA-256 checked)"
echo "-- C HTTP/3 client <- quiche-server"
start_named_server quiche-server-h3 timeout 120 "$BIN/quiche-server" --listen 127.0.0.1:0 \
    --cert "$CERT" --key "$KEY" --root "$WORK/root" --no-retry
rm -f "$WORK/out/h3.bin"
timeout 60 "$BUILD/http3-client" -c "$CA" -o "$WORK/out/h3.bin" 127.0.0.1 "$PORT" /file.bin ||
    fail "the C HTTP/3 client failed against quiche-server"
check_sha "$WORK/out/h3.bin" "$want"
if timeout 60 "$BUILD/http3-client" -c "$CA" -o "$WORK/out/missing" 127.0.0.1 "$PORT" /missing; then
    fail "the C HTTP/3 client reported success for a missing file"
fi
stop_pid "$SERVER_PID"

echo "-- quiche-client (HTTP/3) and the C HTTP/3 client <- C HTTP/3 server"
start_named_server c-h3-server timeout 120 "$BUILD/http3-server" -c "$CERT" -k "$KEY" -r "$WORK/root" -p 0
rm -rf "$WORK/out"/*
timeout 60 "$BIN/quiche-client" --ca "$CA" --dump-responses "$WORK/out" \
    "https://127.0.0.1:$PORT/file.bin" "https://127.0.0.1:$PORT/second.bin" ||
    fail "quiche-client failed against the C HTTP/3 server"
check_sha "$WORK/out/file.bin" "$want"
check_sha "$WORK/out/second.bin" "$(sha256sum <"$WORK/root/second.bin" | cut -d' ' -f1)"
timeout 60 "$BUILD/http3-client" -c "$CA" -o "$WORK/out/c-h3.bin" 127.0.0.1 "$PORT" /file.bin ||
    fail "the C HTTP/3 client failed against the C HTTP/3 server"
check_sha "$WORK/out/c-h3.bin" "$want"
stop_pid "$SERVER_PID"

step "valgrind: no leak, no invalid access"
VALGRIND=(valgrind -q --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite)
echo "-- null_test"
timeout 300 "${VALGRIND[@]}" "$BUILD/null_test" || fail "valgrind reports errors in null_test"
# api_test runs both ends of a connection in one process, so packets sealed there are also
# opened there: Memcheck's false "uninitialised" report on AES-GCM tags (see valgrind.supp)
# then spreads into every check of a received packet. Leaks and invalid accesses are what
# this run looks for.
echo "-- api_test (leaks and invalid accesses)"
timeout 300 "${VALGRIND[@]}" --undef-value-errors=no "$BUILD/api_test" "$WORK/api_test_vg.sqlog" ||
    fail "valgrind reports errors in api_test"

echo "-- C server under valgrind, one connection (quiche-client, 5 MiB)"
start_named_server c-server-vg timeout 300 "${VALGRIND[@]}" --suppressions="$EX/valgrind.supp" "$BUILD/server" -c "$CERT" -k "$KEY" \
    -r "$WORK/root" -p 0 -n 1
rm -rf "$WORK/out"/*
timeout 120 "$BIN/quiche-client" --http09 --ca "$CA" --dump-responses "$WORK/out" \
    "https://127.0.0.1:$PORT/file.bin" || fail "quiche-client failed against the C server under valgrind"
check_sha "$WORK/out/file.bin" "$want"
# -n 1: the server exits once the connection has closed (after its draining period).
wait_server || fail "the C server under valgrind failed"

echo "-- C client under valgrind, one connection (quiche-server, 5 MiB)"
start_named_server quiche-server-vg timeout 300 "$BIN/quiche-server" --listen 127.0.0.1:0 \
    --cert "$CERT" --key "$KEY" --root "$WORK/root"
rm -f "$WORK/out/c.bin"
timeout 300 "${VALGRIND[@]}" --suppressions="$EX/valgrind.supp" "$BUILD/client" -c "$CA" \
    -o "$WORK/out/c.bin" 127.0.0.1 "$PORT" /file.bin || fail "valgrind reports errors in the C client"
stop_pid "$SERVER_PID"
check_sha "$WORK/out/c.bin" "$want"

echo "-- C HTTP/3 server under valgrind, one connection (quiche-client, 5 MiB)"
start_named_server c-h3-server-vg timeout 300 "${VALGRIND[@]}" --suppressions="$EX/valgrind.supp" "$BUILD/http3-server" -c "$CERT" \
    -k "$KEY" -r "$WORK/root" -p 0 -n 1
rm -rf "$WORK/out"/*
timeout 120 "$BIN/quiche-client" --ca "$CA" --dump-responses "$WORK/out" \
    "https://127.0.0.1:$PORT/file.bin" || fail "quiche-client failed against the C HTTP/3 server under valgrind"
check_sha "$WORK/out/file.bin" "$want"
wait_server || fail "the C HTTP/3 server under valgrind failed"

echo "-- C HTTP/3 client under valgrind, one connection (quiche-server, 5 MiB)"
start_named_server quiche-server-h3-vg timeout 300 "$BIN/quiche-server" --listen 127.0.0.1:0 \
    --cert "$CERT" --key "$KEY" --root "$WORK/root"
rm -f "$WORK/out/c-h3.bin"
timeout 300 "${VALGRIND[@]}" --suppressions="$EX/valgrind.supp" "$BUILD/http3-client" -c "$CA" \
    -o "$WORK/out/c-h3.bin" 127.0.0.1 "$PORT" /file.bin ||
    fail "valgrind reports errors in the C HTTP/3 client"
stop_pid "$SERVER_PID"
check_sha "$WORK/out/c-h3.bin" "$want"

echo
echo "ffi-check: all checks passed"
