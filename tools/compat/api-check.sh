#!/usr/bin/env bash
# API compatibility with quiche 0.30, checked by running the same programs on both libraries:
#   - tools/compat/api-check: one Rust program written against quiche 0.30's public API, built
#     against quiche 0.30.0 (cargo fetches the package; it links the BoringSSL that
#     tools/boringssl/build.sh builds once per run, hence
#     cmake, clang and libclang-dev) and against this repository's crate, selected by a cargo
#     feature. Both runs print one `name: value` line per check; the outputs must be identical.
#     quiche 0.30.0 runs on BoringSSL: its output has a BoringSSL part (`boringssl.` lines, the
#     BoringSSL-only API), which ours built with `boringssl-boring-crate` must print identically;
#     ours on rustls must print everything else identically.
#   - tools/compat/api_check.c: its C twin on quiche.h, compiled against our include/quiche.h
#     and against the quiche.h shipped in quiche 0.30.0, both linked with our libquiche.a; the
#     two runs must print the same lines. Again with its BoringSSL part (API_CHECK_BORINGSSL),
#     linked with our libquiche.a built with `boringssl-boring-crate` ($QUICHE_BORING_LIBDIR
#     when tools/test.sh made it, else built here).
# Build outputs: ours in the workspace's target directory (its dependencies are those the
# workspace's debug builds compiled), quiche 0.30.0 in target/api-check/upstream (the slow
# build: keep it cached between runs). Exit status 0 when both diffs are empty.
set -euo pipefail
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
cd "$REPO"
CRATE="$REPO/tools/compat/api-check"
CERTS="$REPO/quiche/tests/certs"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/quiche-api-check.XXXXXX")"
cleanup_dir "$WORK"
say() { echo "api-check: $*"; }
start=$SECONDS

missing=()
command -v cmake >/dev/null 2>&1 || missing+=(cmake)
command -v clang >/dev/null 2>&1 || missing+=(clang)
dpkg -s libclang-dev >/dev/null 2>&1 || missing+=(libclang-dev)
if [ "${#missing[@]}" -gt 0 ]; then
    say "installing ${missing[*]} (quiche 0.30.0 builds BoringSSL)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# quiche 0.30.0's boring-sys (5.4.0, as ours) links the copy that tools/boringssl/build.sh
# builds once per run, instead of compiling BoringSSL again in each target directory.
eval "$(tools/boringssl/build.sh --env)"
say "building against this repository's quiche with boringssl-boring-crate"
# The library with `boringssl-boring-crate,ffi`, as tools/test.sh's BoringSSL step built it
# in the same target directory: only the program is compiled here.
cargo build --quiet --manifest-path "$CRATE/Cargo.toml" --features ours,boringssl \
    --target-dir "$TARGET"
cp "$TARGET/debug/quiche-api-check" "$WORK/api-check-ours-boring"
# The default build last: the programs it leaves in the target directory are those later steps
# use (lossy-link.sh --ci runs its quiche-lossy-link on ours with rustls).
say "building against this repository's quiche (rustls, the default backend)"
cargo build --quiet --manifest-path "$CRATE/Cargo.toml" --features ours --target-dir "$TARGET"
cp "$TARGET/debug/quiche-api-check" "$WORK/api-check-ours"
say "building against quiche 0.30.0"
# RUSTC_BOOTSTRAP=1 as tools/compat/surface.sh needs it for rustdoc's JSON output: cargo
# hashes it into every artifact, so with the same setting both scripts share one build here.
RUSTC_BOOTSTRAP=1 cargo build --quiet --manifest-path "$CRATE/Cargo.toml" --features upstream \
    --target-dir "$REPO/target/api-check/upstream"
cp "$REPO/target/api-check/upstream/debug/quiche-api-check" "$WORK/api-check-upstream"

status=0
for lib in upstream ours ours-boring; do
    mkdir -p "$WORK/$lib"
    timeout 120 "$WORK/api-check-$lib" "$CERTS" "$WORK/$lib" \
        >"$WORK/rust-$lib.txt" 2>"$WORK/rust-$lib.err" || {
        say "the $lib build of api-check failed:"
        cat "$WORK/rust-$lib.err" >&2
        status=1
    }
done
# quiche 0.30.0 runs on BoringSSL, so its output has the BoringSSL part (`boringssl.` lines):
# ours with the feature must print all of it, ours on rustls everything else.
grep -v '^boringssl\.' "$WORK/rust-upstream.txt" >"$WORK/rust-upstream-common.txt" || true
if diff -u "$WORK/rust-upstream.txt" "$WORK/rust-ours-boring.txt"; then
    say "pass: Rust API on BoringSSL, $(wc -l <"$WORK/rust-ours-boring.txt") lines identical" \
        "(quiche 0.30.0 vs ours with boringssl-boring-crate)"
else
    say "FAIL: Rust API outputs differ (- quiche 0.30.0, + ours with boringssl-boring-crate)"
    status=1
fi
if diff -u "$WORK/rust-upstream-common.txt" "$WORK/rust-ours.txt"; then
    say "pass: Rust API on rustls, $(wc -l <"$WORK/rust-ours.txt") lines identical" \
        "(quiche 0.30.0 without its BoringSSL-only part vs ours)"
else
    say "FAIL: Rust API outputs differ (- quiche 0.30.0, + ours on rustls)"
    status=1
fi

# quiche.h as shipped in the package (cargo fetched it for the build above).
QUICHE_SRC="$(cargo metadata --format-version 1 --manifest-path "$CRATE/Cargo.toml" \
    --features upstream | python3 -c 'import json, os, sys
d = json.load(sys.stdin)
print(next(os.path.dirname(p["manifest_path"]) for p in d["packages"]
           if p["name"] == "quiche" and p["version"] == "0.30.0"))')"
tools/ffi-build.sh >/dev/null
for hdr in ours upstream; do
    inc="$REPO/include"
    [ "$hdr" = upstream ] && inc="$QUICHE_SRC/include"
    cc -std=gnu99 -Wall -Werror -I"$inc" -o "$WORK/c-$hdr" tools/compat/api_check.c \
        "$TARGET/release/libquiche.a" -lgcc_s -lutil -lrt -lpthread -lm -ldl -lc
    timeout 60 "$WORK/c-$hdr" "$CERTS" >"$WORK/c-$hdr.txt" || {
        say "api_check.c built with the $hdr header failed"
        status=1
    }
done
if diff -u "$WORK/c-upstream.txt" "$WORK/c-ours.txt"; then
    say "pass: C API, $(wc -l <"$WORK/c-ours.txt") lines identical (quiche's quiche.h vs ours)"
else
    say "FAIL: C API outputs differ (- quiche's header, + ours)"
    status=1
fi

# The BoringSSL-only C calls: api_check.c with API_CHECK_BORINGSSL, on BoringSSL's headers,
# linked with the library built with boringssl-boring-crate (tools/test.sh's, named by
# QUICHE_BORING_LIBDIR; otherwise built here, unoptimized, as tools/compat/surface.sh does).
boring_lib="${QUICHE_BORING_LIBDIR:-}"
if [ -z "$boring_lib" ]; then
    tools/ffi-build.sh --boringssl --debug >/dev/null
    boring_lib="$TARGET/debug"
fi
for hdr in ours upstream; do
    inc="$REPO/include"
    [ "$hdr" = upstream ] && inc="$QUICHE_SRC/include"
    cc -std=gnu99 -Wall -Werror -DAPI_CHECK_BORINGSSL -I"$inc" -I"$BORING_BSSL_PATH/include" \
        -o "$WORK/c-boring-$hdr" tools/compat/api_check.c "$boring_lib/libquiche.a" \
        -lstdc++ -lgcc_s -lutil -lrt -lpthread -lm -ldl -lc
    timeout 60 "$WORK/c-boring-$hdr" "$CERTS" >"$WORK/c-boring-$hdr.txt" || {
        say "api_check.c (BoringSSL part) built with the $hdr header failed"
        status=1
    }
done
if diff -u "$WORK/c-boring-upstream.txt" "$WORK/c-boring-ours.txt"; then
    say "pass: C API with the BoringSSL-only calls, $(wc -l <"$WORK/c-boring-ours.txt") lines" \
        "identical (quiche's quiche.h vs ours, on the library built with boringssl-boring-crate)"
else
    say "FAIL: C API outputs with the BoringSSL-only calls differ (- quiche's header, + ours)"
    status=1
fi
say "took $((SECONDS - start)) s"
exit $status
