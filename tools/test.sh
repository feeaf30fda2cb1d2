#!/usr/bin/env bash
# The project's test command: formatting, lints, tests and docs, exactly as CI runs them.
# It installs what it needs itself, so it works on a fresh machine.
set -euo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"
cd "$REPO"

# Each step's header says when it began (minutes:seconds since the start), and the end of the
# run lists how long each step took: CI must stay under 40 minutes on 2 cores.
RUN_START=$SECONDS
STEP_TIMES=()
step_name=""
step_start=$SECONDS
step_done() {
    [ -n "$step_name" ] && STEP_TIMES+=("$(printf '%5d s  %s' $((SECONDS - step_start)) "$step_name")")
    return 0
}
step() {
    step_done
    step_name="$*"
    step_start=$SECONDS
    local t=$((SECONDS - RUN_START))
    printf '\n== [%02d:%02d] %s\n' $((t / 60)) $((t % 60)) "$*"
}
step_times() {
    step_done
    step_name=""
    echo
    echo "step times (total $((SECONDS - RUN_START)) s):"
    printf '%s\n' "${STEP_TIMES[@]}"
}
at_exit step_times

# Release builds here are optimized without LTO and debug info: the same code the apps, the
# C library and the interop peers run, at half the build time. The figures of the benchmark
# smoke run are not used; `tools/bench/run.sh` outside this script keeps the release profile
# of Cargo.toml (thin LTO).
export CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 \
    CARGO_PROFILE_RELEASE_DEBUG=0

step "toolchain"
if ! command -v cargo >/dev/null 2>&1; then
    echo "cargo is missing: install Rust with rustup first" >&2
    exit 1
fi
for component in rustfmt clippy; do
    if ! rustup component list --installed 2>/dev/null | grep -q "^${component}"; then
        rustup component add "$component"
    fi
done
cargo --version

# tshark dissects our packets in tests: an independent check of the wire format. GNU time
# measures the benchmark's processes (tools/bench/run.sh, smoke-run at the end).
missing=()
command -v tshark >/dev/null 2>&1 || missing+=(tshark)
[ -x /usr/bin/time ] || missing+=(time)
# qlog-plot draws its text with a TrueType font loaded at run time.
[ -f /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ] || missing+=(fonts-dejavu-core)
# BoringSSL's build (tools/boringssl/build.sh, started below) needs cmake, clang and libclang;
# installed here so that no apt-get runs while it builds in the background.
command -v cmake >/dev/null 2>&1 || missing+=(cmake)
command -v clang >/dev/null 2>&1 || missing+=(clang)
dpkg -s libclang-dev >/dev/null 2>&1 || missing+=(libclang-dev)
# curl's build (tools/compat/curl.sh, in the background below) generates its build system.
for tool in autoreconf:autoconf automake:automake libtoolize:libtool pkg-config:pkg-config; do
    command -v "${tool%%:*}" >/dev/null 2>&1 || missing+=("${tool#*:}")
done
if [ "${#missing[@]}" -gt 0 ]; then
    step "installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections || true
    apt-get update -qq
    apt-get install -y -qq "${missing[@]}" >/dev/null
fi
tshark --version | head -n 1

# BoringSSL compiles once per run, in the background at the lowest priority: it takes the CPU
# the steps below leave idle (test runs, interop waits) and is ready, or nearly, when the
# BoringSSL step needs it. Its own session, so that an early exit stops all of it; a new
# session is also a new scheduler autogroup, which gets an equal share of the CPU whatever
# its processes' nice values, so the autogroup itself is niced too (/proc/PID/autogroup).
bssl_log="$(mktemp "${TMPDIR:-/tmp}/boringssl-build.XXXXXX")"
setsid bash -c 'echo 19 >/proc/self/autogroup 2>/dev/null; exec nice -n 19 tools/boringssl/build.sh' \
    >"$bssl_log" 2>&1 &
bssl_pid=$!
stop_boringssl_build() {
    kill -- -"$bssl_pid" 2>/dev/null || true
    rm -f "$bssl_log"
}
at_exit stop_boringssl_build

step "module graph: no import loop in quiche/src (tools/modgraph.py)"
python3 tools/modgraph.py --self-test
python3 tools/modgraph.py

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy -D warnings"
cargo clippy --workspace --all-targets -- -D warnings

step "cargo test (with the C API's unit tests: feature quiche/ffi), netsim's below"
cargo test --workspace --exclude netsim --features quiche/ffi

step "release builds of the apps, quiche-load and tools/relay (once: the steps below skip theirs)"
build_apps quiche-load relay

step "netsim's tests, optimized with debug assertions (unoptimized they took 5 minutes)"
# Minutes of simulated traffic each, nearly all of it in the library's code: optimized they run
# in seconds (27 s of CPU in all, against about 5 minutes unoptimized), and the build costs less
# than the time saved. quiche and netsim keep their debug assertions and overflow checks, as in
# the unoptimized build: the same tests, the same checks.
cargo test --release -p netsim \
    --config 'profile.release.package.quiche.debug-assertions=true' \
    --config 'profile.release.package.quiche.overflow-checks=true' \
    --config 'profile.release.package.netsim.debug-assertions=true' \
    --config 'profile.release.package.netsim.overflow-checks=true'

step "QPACK offline interop: ours against ls-qpack (pylsqpack), both ways, and ours against ours"
tools/qpack-interop/interop.sh

step "cargo doc (warnings are errors)"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps

step "fuzz: every target for 5 s from its seeds (unoptimized build, no sanitizer)"
if [ -d fuzz ]; then
    fuzz/run-all.sh 5 --ci
fi

step "interop: our apps against aioquic, quic-go and quinn, both roles"
# The peers come from PyPI, the Go module proxy and crates.io, installed by the project's script.
tools/interop/setup.sh
tools/interop/run.sh --clients ours --servers ours,aioquic,quic-go,quinn \
    --cases handshake,transfer,multiplexing,versionnegotiation
tools/interop/run.sh --clients aioquic,quic-go,quinn --servers ours \
    --cases handshake,transfer,multiplexing,versionnegotiation
# The wire checks above need single datagrams (GSO off); the transfers again with GSO and GRO.
tools/interop/run.sh --wire off --peers ours,aioquic,quic-go,quinn --cases transfer
# QUIC v2 by compatible version negotiation (RFC 9368): the peers that can do it.
tools/interop/run.sh --clients ours,aioquic --servers ours,aioquic --cases v2
# ECN marking and ACK_ECN counts on the wire, with the peers that do ECN.
tools/interop/run.sh --peers ours,quic-go,quinn --cases ecn
# Loss and corruption through tools/relay (handshakeloss, transferloss, handshakecorruption),
# ours -> quic-go and quic-go -> ours: loop.sh's "loss" set, once (`tools/interop/loop.sh 20
# loss` is its flake check, see tools/interop/README.md). Then NAT rebinding and active
# migration (the server follows the client after path validation), with one peer in both roles.
tools/interop/loop.sh 1 loss
tools/interop/run.sh --clients ours --servers quic-go --cases rebind-port,rebind-addr,connectionmigration
tools/interop/run.sh --clients quic-go --servers ours --cases rebind-port,rebind-addr,connectionmigration
# A 2 s black-out mid-transfer, the server's 3x limit under a large certificate chain with the
# client's datagrams 2-7 dropped, and a transfer over IPv6 (::1).
# quic-go's server can end one datagram over 3x (see tools/interop/README.md): our client's
# amplificationlimit runs against our own server instead.
tools/interop/run.sh --clients quic-go --servers ours --cases blackhole,amplificationlimit,ipv6
tools/interop/run.sh --clients ours --servers quic-go --cases blackhole,ipv6
tools/interop/run.sh --clients ours --servers ours --cases amplificationlimit

step "load smoke: 200 connections from tools/load against quiche-server"
tools/load/smoke.sh 200 2

step "HTTP/3 interop: our apps against aioquic, quic-go and ngtcp2, both roles"
tools/interop/run.sh --clients ours --servers ours,aioquic,quic-go,ngtcp2 --cases http3
tools/interop/run.sh --clients aioquic,quic-go,ngtcp2 --servers ours --cases http3

step "a real browser: headless Chromium loads 100 resources from quiche-server over HTTP/3"
tools/browser/chromium-h3.sh --server tools/interop/ours-peer.sh

step "quiche 0.30's own example programs, unchanged, on this library"
tools/compat/examples.sh

step "BoringSSL backend (feature boringssl-boring-crate): clippy, the library's tests and the C API's unit tests, the C libraries"
# BoringSSL is compiled once per run (tools/boringssl/build.sh, boring-sys's vendored source);
# the builds below link that copy through BORING_BSSL_PATH. The default build above stays
# pure Rust: the variable is set for this step only.
waited=$SECONDS
wait "$bssl_pid" || { cat "$bssl_log" >&2; echo "BoringSSL's build failed" >&2; exit 1; }
echo "BoringSSL build: waited $((SECONDS - waited)) s for it; its log:"
cat "$bssl_log"
boringssl_env="$(tools/boringssl/build.sh --env)"
(
    eval "$boringssl_env"
    cargo clippy -p quiche --all-targets --features boringssl-boring-crate,ffi -- -D warnings
    cargo test -p quiche --features boringssl-boring-crate,ffi
)
# libquiche.a and .so with the feature, unoptimized (the tests above built their
# dependencies; about 25 s): tools/ffi-check.sh checks quiche's BoringSSL-only C functions
# against them.
tools/ffi-build.sh --boringssl --debug
export QUICHE_BORING_LIBDIR="$TARGET/debug"
# curl 8.21.0 on those libraries builds in the background from here, at the lowest priority as
# BoringSSL did (about 3 minutes of CPU: autoreconf, configure, make), while the steps below
# wait on the network; its checks run in the curl step. It links libquiche.so, which nothing
# below rebuilds.
curl_log="$(mktemp "${TMPDIR:-/tmp}/curl-build.XXXXXX")"
setsid bash -c 'echo 19 >/proc/self/autogroup 2>/dev/null; exec nice -n 19 tools/compat/curl.sh --build-only' \
    >"$curl_log" 2>&1 &
curl_pid=$!
stop_curl_build() {
    kill -- -"$curl_pid" 2>/dev/null || true
    rm -f "$curl_log"
}
at_exit stop_curl_build
# Sessions across processes: quiche-client --session-file resumes with 0-RTT in the next
# process, with quiche 0.30's client both ways, checked on the wire. About 50 s: the apps with
# the feature (unoptimized) and 8 s of checks; quiche 0.30.0's build moves here from
# tools/compat/api-check.sh below, which reuses it.
tools/compat/sessions.sh

step "BoringSSL backend: quiche 0.30's own examples, and the http3 interop case both roles"
# The examples and our apps with the feature, unoptimized (their dependencies were built
# above); the C examples linked with the feature's libquiche.a of QUICHE_BORING_LIBDIR.
tools/compat/examples.sh --boringssl
# The apps as sessions.sh built them (with BORING_BSSL_PATH: without it boring-sys would
# compile BoringSSL again), copied: a later default build puts its own binaries at these paths.
(
    eval "$boringssl_env"
    cargo build --quiet -p quiche-apps --features boringssl-boring-crate
)
boring_apps="$(mktemp -d "${TMPDIR:-/tmp}/boring-apps.XXXXXX")"
cleanup_dir "$boring_apps"
cp "$TARGET/debug/quiche-client" "$TARGET/debug/quiche-server" "$boring_apps/"
OURS_BIN="$boring_apps" tools/interop/run.sh --clients ours --servers ours,aioquic,quic-go,ngtcp2 --cases http3
OURS_BIN="$boring_apps" tools/interop/run.sh --clients aioquic,quic-go,ngtcp2 --servers ours --cases http3

step "C API: header vs libraries, C/C++ examples, interop with the Rust apps, valgrind"
# Its clippy and unit-test part ran above: `cargo test --features quiche/ffi` (rustls) and the
# BoringSSL step's clippy and tests (`boringssl-boring-crate,ffi`).
FFI_CHECK_SKIP_RUST_TESTS=1 tools/ffi-check.sh

step "api-check: one program on quiche 0.30's API, built against crates.io quiche and against ours"
# Same output, in Rust and in C (quiche 0.30.0 links the BoringSSL built above).
tools/compat/api-check.sh
# Loss recovery at near-zero RTT against quiche 0.30 (issue 31 item 5), on the unoptimized
# builds api-check made (its crate's second program): what does not depend on optimization,
# timer waits and resends per loss. The timed comparison is `tools/compat/lossy-link.sh`.
tools/compat/lossy-link.sh --ci

step "surface: every public item of quiche 0.30 (Rust and C) in ours, both backends"
# quiche 0.30.0's Rust items from tools/compat/surface-quiche-0.30.0.txt (surface.sh --verify
# recomputes them: tools/compat/README.md); ours documented in the workspace's target
# directory, where the clippy steps above checked the dependencies.
tools/compat/surface.sh

step "curl 8.21.0 on our library (BoringSSL backend): HTTP/3 from quiche-server, aioquic and quic-go"
# Built in the background since the BoringSSL step, on QUICHE_BORING_LIBDIR's libquiche.so,
# configured with only what the checks need; curl.sh finds the build and runs its checks.
waited=$SECONDS
wait "$curl_pid" || { cat "$curl_log" >&2; echo "curl's build failed" >&2; exit 1; }
echo "curl build: waited $((SECONDS - waited)) s for it; its log:"
cat "$curl_log"
tools/compat/curl.sh

step "demo: the README's first command"
./tools/demo.sh

step "benchmark smoke run (tools/bench/run.sh, tiny sizes: it must keep working, figures not used)"
# The ceiling (../shared/ceiling) runs too when it is there; the history line goes to a
# temporary file, not into the clone.
bench_history="$(mktemp "${TMPDIR:-/tmp}/bench-history.XXXXXX")"
tools/bench/run.sh --size 16M --runs 1 --handshakes 50 --hs-runs 1 --idle-conns 50 \
    --rps-requests 500 --rps-runs 1 --history "$bench_history"
[ "$(wc -l <"$bench_history")" = 2 ] || { echo "run.sh wrote no history line" >&2; exit 1; }
rm -f "$bench_history"

echo
echo "all checks passed"
