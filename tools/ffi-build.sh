#!/usr/bin/env bash
# Builds the C API: libquiche.a and libquiche.so (release, feature `ffi`) and quiche.pc, all in
# target/release. The header is include/quiche.h.
#
#   tools/ffi-build.sh                      # then e.g.:
#   PKG_CONFIG_PATH=$PWD/target/release cc app.c $(pkg-config --cflags --libs quiche)
#
# The crate types are asked for here rather than in quiche/Cargo.toml, so that ordinary builds
# of the Rust crate do not link two extra libraries every time (see the comment there).
# QUICHE_PC_PREFIX sets the pc file's prefix for an installed copy: libdir and includedir then
# become PREFIX/lib and PREFIX/include (copy the libraries and the header there yourself).
#
#   tools/ffi-build.sh --boringssl [--debug]
#
# builds them with TLS on BoringSSL (features `ffi,boringssl-boring-crate`: quiche's
# BoringSSL-only functions too), linked with the BoringSSL of tools/boringssl/build.sh, in
# target/ffi-boringssl/release (or, with --debug, unoptimized in target/debug, where the tests
# of the feature already built every dependency). Not in target/release: cargo names a
# staticlib and a cdylib without a hash, so the two variants would overwrite each other and
# each build would redo the other. C programs linking this libquiche.a also need -lstdc++
# (BoringSSL's libssl is C++); its quiche.pc says so.
set -euo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"
cd "$REPO"
ROOT="$REPO"

features=ffi
profile=(--release)
OUT="$TARGET/release"
# What Rust's standard library needs from the system when libquiche.a is linked statically
# (`rustc --print native-static-libs` on Linux).
native_libs="-lgcc_s -lutil -lrt -lpthread -lm -ldl -lc"
case "${1:-}" in
    --boringssl)
        eval "$(tools/boringssl/build.sh --env)"
        features=ffi,boringssl-boring-crate
        native_libs="-lstdc++ $native_libs"
        if [ "${2:-}" = --debug ]; then
            profile=()
            OUT="$TARGET/debug"
        else
            export CARGO_TARGET_DIR="$TARGET/ffi-boringssl"
            OUT="$CARGO_TARGET_DIR/release"
        fi
        ;;
    "") ;;
    *)
        echo "usage: tools/ffi-build.sh [--boringssl [--debug]]" >&2
        exit 2
        ;;
esac

cargo rustc "${profile[@]}" --quiet -p quiche --lib --features "$features" \
    --crate-type staticlib --crate-type cdylib

if [ -n "${QUICHE_PC_PREFIX:-}" ]; then
    prefix="$QUICHE_PC_PREFIX"
    # pkg-config expands ${prefix} itself: the .pc file holds it as written.
    # shellcheck disable=SC2016
    libdir='${prefix}/lib'
    # shellcheck disable=SC2016
    includedir='${prefix}/include'
else
    prefix="$ROOT"
    libdir="$OUT"
    includedir="$ROOT/include"
fi
version="$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)"
url="$(sed -n 's/^repository = "\(.*\)"/\1/p' Cargo.toml | head -n 1)"

sed -e "s|@PREFIX@|$prefix|" -e "s|@LIBDIR@|$libdir|" -e "s|@INCLUDEDIR@|$includedir|" \
    -e "s|@VERSION@|$version|" -e "s|@URL@|$url|" -e "s|@NATIVE_LIBS@|$native_libs|" \
    quiche/quiche.pc.in >"$OUT/quiche.pc"

echo "built $OUT/libquiche.a, $OUT/libquiche.so and $OUT/quiche.pc"
