#!/usr/bin/env bash
# Builds BoringSSL once and installs it (lib/libssl.a, lib/libcrypto.a, include/) under
# target/boringssl, for everything in a run that needs it: our library with the
# `boringssl-boring-crate` feature, quiche 0.30.0 in tools/compat, the C programs and curl.
#
# BoringSSL is compiled by boring-sys's own build script (its vendored source, its cmake
# settings, release mode) with BORING_BSSL_INSTALL_DIR; every later build then links the
# installed copy through BORING_BSSL_PATH instead of compiling BoringSSL again in its own
# target directory. Source this file's output into the environment:
#     eval "$(tools/boringssl/build.sh --env)"
# Needs cmake, clang and libclang-dev (installed here if missing). Idempotent: an existing
# install is reused.
set -euo pipefail
cd "$(dirname "$0")/../.."
REPO="$PWD"
DEST="$REPO/target/boringssl"
say() { echo "boringssl: $*" >&2; }

missing=()
command -v cmake >/dev/null 2>&1 || missing+=(cmake)
command -v clang >/dev/null 2>&1 || missing+=(clang)
dpkg -s libclang-dev >/dev/null 2>&1 || missing+=(libclang-dev)
if [ "${#missing[@]}" -gt 0 ]; then
    say "installing ${missing[*]}"
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if [ ! -f "$DEST/lib/libssl.a" ] || [ ! -f "$DEST/lib/libcrypto.a" ] ||
    [ ! -f "$DEST/include/openssl/ssl.h" ]; then
    start=$SECONDS
    say "building BoringSSL (boring-sys 5.4.0's vendored source; a few minutes)"
    tmp="$REPO/target/boringssl.tmp"
    rm -rf "$tmp" "$DEST"
    mkdir -p "$tmp"
    # The install directory must exist and be empty; the build script fills it.
    env -u BORING_BSSL_PATH -u BORING_BSSL_INCLUDE_PATH BORING_BSSL_INSTALL_DIR="$tmp" \
        cargo build --quiet --release --manifest-path "$REPO/tools/boringssl/Cargo.toml" \
        --target-dir "$REPO/target/boringssl-build" >&2
    mv "$tmp" "$DEST"
    # The cmake build tree is not needed any more (a few hundred MB).
    rm -rf "$REPO/target/boringssl-build"
    say "built in $((SECONDS - start)) s: $DEST"
fi

if [ "${1:-}" = --env ]; then
    echo "export BORING_BSSL_PATH='$DEST'"
fi
