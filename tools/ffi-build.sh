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
set -euo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"
cd "$REPO"
ROOT="$REPO"

cargo rustc --release --quiet -p quiche --lib --features ffi \
    --crate-type staticlib --crate-type cdylib

OUT="$TARGET/release"
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
# What Rust's standard library needs from the system when libquiche.a is linked statically
# (`rustc --print native-static-libs` on Linux).
native_libs="-lgcc_s -lutil -lrt -lpthread -lm -ldl -lc"

sed -e "s|@PREFIX@|$prefix|" -e "s|@LIBDIR@|$libdir|" -e "s|@INCLUDEDIR@|$includedir|" \
    -e "s|@VERSION@|$version|" -e "s|@URL@|$url|" -e "s|@NATIVE_LIBS@|$native_libs|" \
    quiche/quiche.pc.in >"$OUT/quiche.pc"

echo "built $OUT/libquiche.a, $OUT/libquiche.so and $OUT/quiche.pc"
