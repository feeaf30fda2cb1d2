#!/usr/bin/env bash
# quiche's own example programs against this library: the crates.io package quiche 0.30.0 ships
# them in its examples/ folder; cargo fetches the package, and the Rust examples are built,
# unchanged, in a temporary crate whose `quiche` dependency is this repository's crate. Nothing
# of quiche's is copied into this tree. Then, over loopback:
#   - quiche's client.rs against quiche's server.rs (HTTP/0.9), both on our library;
#   - quiche's http3-client.rs against quiche's http3-server.rs (HTTP/3), both on our library;
#   - quiche's http3-client.rs against our quiche-server, and our quiche-client against
#     quiche's http3-server.rs.
# Each transfer is checked byte for byte. quiche's C examples (client.c, server.c,
# http3-client.c, http3-server.c) are compiled against quiche's own header and linked with our
# libquiche.a. Exit status 0 when all pass.
#
#   tools/compat/examples.sh [--boringssl]
#
# --boringssl: the same on our BoringSSL backend (feature `boringssl-boring-crate`, linked with
# the BoringSSL of tools/boringssl/build.sh): the Rust examples and our apps built with the
# feature, unoptimized (tools/test.sh's BoringSSL step built their dependencies), the C
# examples linked with the feature's libquiche.a ($QUICHE_BORING_LIBDIR when set, as
# tools/test.sh sets it; else `tools/ffi-build.sh --boringssl --debug`).
set -euo pipefail
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
cd "$REPO"
BORING=0
case "${1:-}" in
    "") ;;
    --boringssl) BORING=1 ;;
    *)
        echo "usage: tools/compat/examples.sh [--boringssl]" >&2
        exit 2
        ;;
esac
WORK="$(mktemp -d "${TMPDIR:-/tmp}/quiche-compat.XXXXXX")"
cleanup_dir "$WORK"
# The servers of the pair running now (quiche's examples all use port 4433).
PIDS=()
say() { echo "compat: $*"; }
npass=0 nfail=0
pass() { say "pass: $*"; npass=$((npass + 1)); }
fail() { say "FAIL: $*"; nfail=$((nfail + 1)); }
show_tail() { # WHAT FILE: the end of a log, for a failure CI cannot reproduce on demand
    say "--- last 40 lines of $1"
    tail -n 40 "$2" 2>/dev/null | sed 's/^/    /' || true
}

say "fetching quiche 0.30.0 (its source only; nothing of it is built)"
mkdir -p "$WORK/fetch/src"
cat >"$WORK/fetch/Cargo.toml" <<'TOML'
[package]
name = "fetch-quiche"
version = "0.0.0"
edition = "2021"
publish = false
[dependencies]
quiche = "=0.30.0"
[workspace]
TOML
echo "" >"$WORK/fetch/src/lib.rs"
cargo fetch --quiet --manifest-path "$WORK/fetch/Cargo.toml"
QUICHE_SRC="$(cargo metadata --format-version 1 --manifest-path "$WORK/fetch/Cargo.toml" |
    python3 -c 'import json, os, sys
d = json.load(sys.stdin)
print(next(os.path.dirname(p["manifest_path"]) for p in d["packages"] if p["name"] == "quiche"))')"
say "quiche 0.30.0's examples: $QUICHE_SRC/examples"
QUICHE_DEP="quiche = { path = \"$REPO/quiche\" }"
if [ "$BORING" = 1 ]; then
    eval "$(tools/boringssl/build.sh --env)"
    QUICHE_DEP="quiche = { path = \"$REPO/quiche\", features = [\"boringssl-boring-crate\"] }"
    say "on the BoringSSL backend (feature boringssl-boring-crate)"
fi

EX="$WORK/examples-crate"
mkdir -p "$EX/src" "$EX/examples/root"
cat >"$EX/Cargo.toml" <<TOML
[package]
name = "quiche-examples-on-ours"
version = "0.0.0"
edition = "2021"
publish = false
[dependencies]
$QUICHE_DEP
mio = { version = "1", features = ["net", "os-poll"] }
ring = "0.17"
url = "2"
log = "0.4"
[workspace]
TOML
echo "" >"$EX/src/lib.rs"
for f in client server http3-client http3-server; do
    ln -s "$QUICHE_SRC/examples/$f.rs" "$EX/examples/$f.rs"
done
# The example servers read their certificate from examples/ under the working directory.
ln -s "$QUICHE_SRC/examples/cert.crt" "$EX/examples/cert.crt"
ln -s "$QUICHE_SRC/examples/cert.key" "$EX/examples/cert.key"
say "building client.rs, server.rs, http3-client.rs, http3-server.rs against this repository's quiche"
# In the workspace's target directory: the release build of the apps below (or before, in
# tools/test.sh) compiled the same quiche and dependencies, so only the examples compile here.
# With --boringssl unoptimized, as the BoringSSL step of tools/test.sh built the feature's.
if [ "$BORING" = 1 ]; then
    cargo build --quiet --manifest-path "$EX/Cargo.toml" --target-dir "$TARGET" --examples
    BIN="$TARGET/debug/examples"
    cargo build --quiet -p quiche-apps --features boringssl-boring-crate
    # Copied at once: a later default build of the apps puts its own binaries at these paths.
    APPS="$WORK/apps"
    mkdir -p "$APPS"
    cp "$TARGET/debug/quiche-client" "$TARGET/debug/quiche-server" "$APPS/"
else
    cargo build --quiet --release --manifest-path "$EX/Cargo.toml" --target-dir "$TARGET" --examples
    BIN="$TARGET/release/examples"
    build_apps
    APPS="$TARGET/release"
fi
head -c 300000 /dev/urandom >"$EX/examples/root/index.html"
want="$(sha256sum <"$EX/examples/root/index.html" | cut -d' ' -f1)"

# Runs an example server (port 4433, fixed in quiche's examples) from the crate directory.
start_example_server() {
    (cd "$EX" && exec timeout 60 "$BIN/$1") >"$WORK/$1.log" 2>&1 &
    PIDS+=($!)
    cleanup_pid "$!"
    wait_port udp 4433 5 "$!"
}
stop_servers() {
    local pid
    for pid in ${PIDS[@]+"${PIDS[@]}"}; do stop_pid "$pid"; done
    PIDS=()
}
check() { # NAME FILE
    if [ -f "$2" ] && [ "$(sha256sum <"$2" | cut -d' ' -f1)" = "$want" ]; then pass "$1"; else fail "$1"; fi
}
URL=https://127.0.0.1:4433/index.html

start_example_server server || fail "server.rs did not start"
(cd "$EX" && timeout 30 "$BIN/client" "$URL") >"$WORK/hq.body" 2>"$WORK/client.log" || true
stop_servers
# server.rs answers every request with its own small body; the exchange is what is checked.
if [ -s "$WORK/hq.body" ]; then pass "client.rs <-> server.rs ($(wc -c <"$WORK/hq.body") bytes)"; else fail "client.rs <-> server.rs"; fi

start_example_server http3-server || fail "http3-server.rs did not start"
(cd "$EX" && timeout 30 "$BIN/http3-client" "$URL") >"$WORK/h3.body" 2>"$WORK/h3-client.log" || true
check "http3-client.rs <-> http3-server.rs" "$WORK/h3.body"
mkdir -p "$WORK/out"
timeout 30 "$APPS/quiche-client" --no-verify --dump-responses "$WORK/out" "$URL" >/dev/null 2>"$WORK/ours-client.log" || true
check "our quiche-client -> http3-server.rs" "$WORK/out/index.html"
stop_servers

start_server "$WORK/ours.out" "$APPS/quiche-server" --listen 127.0.0.1:4433 \
    --cert quiche/tests/certs/cert.crt --key quiche/tests/certs/cert.key \
    --root "$EX/examples/root" --no-retry || fail "our quiche-server did not start"
PIDS+=("$SERVER_PID")
timeout 30 "$BIN/http3-client" "$URL" >"$WORK/h3-ours.body" 2>/dev/null || true
check "http3-client.rs -> our quiche-server" "$WORK/h3-ours.body"
stop_servers

# The C examples: built unchanged against quiche's own quiche.h and linked with our library
# (they use libev and uthash, from Debian's packages).
if ! [ -f /usr/include/ev.h ] || ! [ -f /usr/include/uthash.h ]; then
    say "installing libev-dev and uthash-dev"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libev-dev uthash-dev >/dev/null; } ||
        fail "apt-get install libev-dev uthash-dev"
fi
if [ "$BORING" = 1 ]; then
    LIBQUICHE="${QUICHE_BORING_LIBDIR:-}"
    if [ -z "$LIBQUICHE" ]; then
        tools/ffi-build.sh --boringssl --debug >/dev/null
        LIBQUICHE="$TARGET/debug"
    fi
    LIBQUICHE="$LIBQUICHE/libquiche.a"
    # BoringSSL's libssl is C++ (the feature's quiche.pc says so too).
    EXTRA_LIBS=(-lstdc++)
else
    tools/ffi-build.sh >/dev/null
    LIBQUICHE="$TARGET/release/libquiche.a"
    EXTRA_LIBS=()
fi
for f in client server http3-client http3-server; do
    if cc -std=gnu99 -I"$QUICHE_SRC/include" -o "$WORK/c-$f" "$QUICHE_SRC/examples/$f.c" \
        "$LIBQUICHE" -lev ${EXTRA_LIBS[@]+"${EXTRA_LIBS[@]}"} -lgcc_s -lutil -lrt -lpthread -lm -ldl -lc \
        >"$WORK/c-$f.log" 2>&1; then
        pass "quiche's $f.c builds against quiche's quiche.h and links with our library"
    else
        cat "$WORK/c-$f.log" >&2
        fail "quiche's $f.c against quiche's quiche.h and our library"
    fi
done

# The C programs over loopback: against each other, and against our apps. Their servers answer
# every request with "byez\n"; their clients print the body on stdout with printf("%.*s"), so
# the file our server serves them is text.
CROOT="$WORK/c-root"
mkdir -p "$CROOT" "$WORK/c-out"
head -c 30000 /dev/urandom | base64 -w 76 >"$CROOT/index.html"
ctext="$(sha256sum <"$CROOT/index.html" | cut -d' ' -f1)"
start_c_server() { # PROGRAM: started from the folder with quiche's example certificate
    (cd "$EX/examples" && exec timeout 60 "$WORK/c-$1" 127.0.0.1 4433) >"$WORK/c-$1.out" 2>&1 &
    PIDS+=($!)
    cleanup_pid "$!"
    wait_port udp 4433 5 "$!"
}
c_pair() { # SERVER CLIENT
    if ! [ -x "$WORK/c-$1" ] || ! [ -x "$WORK/c-$2" ]; then
        fail "$2.c <-> $1.c (not built)"
        return
    fi
    start_c_server "$1" || fail "$1.c did not start"
    timeout 30 "$WORK/c-$2" 127.0.0.1 4433 >"$WORK/c-$2.body" 2>"$WORK/c-$2.log" || true
    stop_servers
    if grep -q '^byez$' "$WORK/c-$2.body"; then pass "quiche's $2.c <-> $1.c"; else fail "quiche's $2.c <-> $1.c"; fi
}
c_pair server client
c_pair http3-server http3-client

# Our quiche-client against the C servers (ALPN hq-interop with --http09, h3 otherwise).
for pair in "server --http09" "http3-server"; do
    # shellcheck disable=SC2086 # the pair is the server's name and the client's option
    set -- $pair
    [ -x "$WORK/c-$1" ] || { fail "our quiche-client -> $1.c (not built)"; continue; }
    start_c_server "$1" || fail "$1.c did not start"
    rm -rf "$WORK/c-out" && mkdir -p "$WORK/c-out"
    timeout 30 "$APPS/quiche-client" --no-verify ${2:+"$2"} --dump-responses "$WORK/c-out" \
        "$URL" >/dev/null 2>"$WORK/ours-to-c-$1.log" || true
    stop_servers
    if [ "$(cat "$WORK/c-out/index.html" 2>/dev/null)" = "byez" ]; then
        pass "our quiche-client -> quiche's $1.c"
    else
        fail "our quiche-client -> quiche's $1.c"
    fi
done

# The C clients against our quiche-server (it serves HTTP/0.9 and HTTP/3 on one port).
start_server "$WORK/ours-c.out" "$APPS/quiche-server" --listen 127.0.0.1:4433 \
    --cert quiche/tests/certs/cert.crt --key quiche/tests/certs/cert.key --root "$CROOT" \
    --no-retry || fail "our quiche-server did not start"
PIDS+=("$SERVER_PID")
for prog in client http3-client; do
    [ -x "$WORK/c-$prog" ] || { fail "quiche's $prog.c -> our quiche-server (not built)"; continue; }
    rc=0
    timeout 30 "$WORK/c-$prog" 127.0.0.1 4433 >"$WORK/c-$prog-ours.body" 2>"$WORK/c-$prog-ours.log" || rc=$?
    if [ "$(sha256sum <"$WORK/c-$prog-ours.body" | cut -d' ' -f1)" = "$ctext" ]; then
        pass "quiche's $prog.c -> our quiche-server"
    else
        fail "quiche's $prog.c -> our quiche-server (exit $rc, $(wc -c <"$WORK/c-$prog-ours.body") of $(wc -c <"$CROOT/index.html") bytes)"
        show_tail "$prog.c's log" "$WORK/c-$prog-ours.log"
        show_tail "our quiche-server's log" "$WORK/ours-c.out"
    fi
done
stop_servers

say "$npass passed, $nfail failed"
[ "$nfail" = 0 ]
