#!/usr/bin/env bash
# The public surface of quiche 0.30 next to ours, item by item, so that what a quiche program
# may use and we lack cannot go unnoticed:
#   - Rust: every public item reachable from the crate root of crates.io quiche 0.30.0 (features
#     `qlog` and `custom-client-dcid`, and its default `boringssl-boring-crate`) and of this
#     repository's crate (same features; again with `boringssl-boring-crate` once our crate has
#     that feature), from rustdoc's JSON output (RUSTC_BOOTSTRAP=1 ... --output-format json):
#     modules, functions, methods, structs and their public fields, enums and variants, traits
#     and their items, constants, type aliases, and trait implementations (Send and Sync
#     included). tools/compat/surface.py lists them; lifetimes and parameter names are left out.
#   - C: every function, type, struct field, enum constant and macro of quiche 0.30's
#     include/quiche.h against ours (clang's JSON AST), and every function of ours must be
#     exported by libquiche.a (nm).
# Prints one line per item of quiche's that is missing from ours (`missing`) or has another
# signature (`differs`), unless the exception list below names it with a reason (`excepted`),
# then a summary. Exit status 1 if anything is missing or differs without an exception.
#
# quiche 0.30.0 needs BoringSSL: its rustdoc run (--refresh, --verify) links the copy
# tools/boringssl/build.sh builds once per run, in target/api-check/upstream, the target
# directory tools/compat/api-check.sh builds quiche 0.30.0 in, with the same settings. Ours is
# documented in the workspace's target directory: after tools/test.sh's clippy steps (default
# features, and boringssl-boring-crate) only rustdoc itself runs.
#
# quiche 0.30.0's Rust item list does not change (a published version, fixed features): it is
# committed, as surface.py prints it, in tools/compat/surface-quiche-0.30.0.txt, whose header
# holds a key (SHA-256 of the dependency line, surface.py and `rustc -V`). A run uses the file
# when the key matches and otherwise computes the list as --refresh does (about 80 s more, and
# says so). --refresh computes it from quiche 0.30.0's rustdoc JSON and rewrites the file;
# --verify computes it and fails if the committed file differs (key or items).
#
#   tools/compat/surface.sh [--all]     # --all also prints the matches and the exceptions
#   tools/compat/surface.sh --refresh   # regenerate surface-quiche-0.30.0.txt (then commit it)
#   tools/compat/surface.sh --verify    # recompute it: does the committed file still hold?
set -euo pipefail
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
cd "$REPO"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/quiche-surface.XXXXXX")"
cleanup_dir "$WORK"
start=$SECONDS
say() { echo "surface: [$((SECONDS - start)) s] $*"; }
ALL=0
CACHE_MODE=use
case "${1:-}" in
    "") ;;
    --all) ALL=1 ;;
    --refresh) CACHE_MODE=refresh ;;
    --verify) CACHE_MODE=verify ;;
    *)
        echo "usage: tools/compat/surface.sh [--all | --refresh | --verify]" >&2
        exit 2
        ;;
esac

# ------------------------------------------------------------------------------------------
# The exceptions: items of quiche 0.30 we do not have, or have with another signature, on
# purpose. Each line is a regular expression (Python syntax) matched against the whole item
# key (`KIND PATH`, e.g. `method quiche::Connection::stream_capacity`), a tab, and the reason.
# Keep it short: everything else is a bug to fix.
EXCEPTIONS="$(cat <<'EOF'
method quiche::Connection::stream_capacity	takes &self, not &mut self: every call written for quiche compiles (README, "Differences from quiche")
method quiche::Connection::path_stats	returns PathStatsIter, an Iterator<Item = PathStats> like quiche's impl Iterator (it also derefs to the active path's PathStats): every use of quiche's compiles
method quiche::TransportParams::to_qlog	takes qlog 0.16's TransportOwner (quiche: qlog 0.18's TransportInitiator): this crate writes qlog 0.16's schema, the one stock qvis opens
EOF
)"
# Items that only the BoringSSL backend has: missing from the build without it, required from
# the build with it (feature `boringssl-boring-crate`, once our crate has it).
BORING_ONLY="$(cat <<'EOF'
method quiche::Config::with_boring_ssl_ctx_builder
method quiche::Config::set_ticket_key
method quiche::Config::load_verify_locations_from_directory
method quiche::Config::set_curves_list
method quiche::Connection::peer_cert
method quiche::Connection::peer_cert_chain
impl AsMut<SslRef> for quiche::Connection
method quiche::Connection::set_cc_algorithm_in_handshake
method quiche::Connection::set_cc_algorithm_name_in_handshake
method quiche::Connection::set_initial_congestion_window_packets_in_handshake
method quiche::Connection::set_enable_relaxed_loss_threshold_in_handshake
method quiche::Connection::set_enable_cubic_idle_restart_fix_in_handshake
method quiche::Connection::set_hystart_in_handshake
method quiche::Connection::set_pacing_in_handshake
method quiche::Connection::set_max_pacing_rate_in_handshake
method quiche::Connection::set_max_send_udp_payload_size_in_handshake
method quiche::Connection::set_send_capacity_factor_in_handshake
method quiche::Connection::set_discover_pmtu_in_handshake
method quiche::Connection::set_max_idle_timeout_in_handshake
method quiche::Connection::set_initial_max_streams_bidi_in_handshake
method quiche::Connection::set_use_initial_max_data_as_flow_control_win_in_handshake
c-fn quiche_conn_new_with_tls
c-fn quiche_conn_new_with_tls_and_client_dcid
c-fn quiche_config_set_ticket_key
c-fn quiche_config_load_verify_locations_from_directory
c-fn quiche_config_set_curves_list
c-fn quiche_conn_peer_cert
EOF
)"

missing=()
command -v clang >/dev/null 2>&1 || missing+=(clang)
command -v cmake >/dev/null 2>&1 || missing+=(cmake)
dpkg -s libclang-dev >/dev/null 2>&1 || missing+=(libclang-dev)
command -v nm >/dev/null 2>&1 || missing+=(binutils)
if [ "${#missing[@]}" -gt 0 ]; then
    say "installing ${missing[*]} (clang parses the headers; quiche 0.30.0 builds BoringSSL)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# surface_crate NAME DEP: a crate in $WORK/NAME that exists only to name the `quiche`
# dependency DEP with its features.
surface_crate() {
    local name="$1" dep="$2"
    mkdir -p "$WORK/$name/src"
    cat >"$WORK/$name/Cargo.toml" <<TOML
[package]
name = "surface-$name"
version = "0.0.0"
edition = "2021"
publish = false
[dependencies]
$dep
[workspace]
TOML
    : >"$WORK/$name/src/lib.rs"
}

# rustdoc itself with RUSTC_BOOTSTRAP=1, for cargo's RUSTDOC: only the documented crate sees the
# setting, so its dependencies are the unit cargo already checked in that target directory
# (cargo hashes RUSTC_BOOTSTRAP into every artifact when it is in its own environment).
printf '#!/bin/sh\nRUSTC_BOOTSTRAP=1 exec rustdoc "$@"\n' >"$WORK/rustdoc-bootstrap"
chmod +x "$WORK/rustdoc-bootstrap"

# rustdoc JSON of one `quiche` dependency: $1 a name, $2 the dependency line, $3 the target
# directory, $4 `all` to set RUSTC_BOOTSTRAP=1 for the whole build (as tools/compat/api-check.sh
# builds quiche 0.30.0 in target/api-check/upstream: that build is shared) or `rustdoc` for
# rustdoc only (ours, in the workspace's target directory: its dependencies were checked by
# the clippy steps of tools/test.sh); its item list (surface.py) in $WORK/NAME.txt.
rustdoc_json() {
    local name="$1" dep="$2" target="$3" bootstrap="$4"
    surface_crate "$name" "$dep"
    local version
    version="$(cargo metadata --format-version 1 --manifest-path "$WORK/$name/Cargo.toml" |
        python3 -c 'import json, sys
d = json.load(sys.stdin)
print(next(p["version"] for p in d["packages"] if p["name"] == "quiche"))')"
    # BoringSSL comes from tools/boringssl/build.sh.
    (
        eval "$(tools/boringssl/build.sh --env)"
        if [ "$bootstrap" = all ]; then
            export RUSTC_BOOTSTRAP=1
        else
            export RUSTDOC="$WORK/rustdoc-bootstrap"
        fi
        timeout 7200 cargo rustdoc --quiet -p "quiche@$version" \
            --manifest-path "$WORK/$name/Cargo.toml" --target-dir "$target" \
            -- -Z unstable-options --output-format json --cap-lints allow
    )
    cp "$target/doc/quiche.json" "$WORK/$name.json"
    python3 tools/compat/surface.py rust "$WORK/$name.json" >"$WORK/$name.txt"
}

UPSTREAM_DEP='quiche = { version = "=0.30.0", features = ["qlog", "custom-client-dcid"] }'
CACHE=tools/compat/surface-quiche-0.30.0.txt
cache_key="$( (echo "$UPSTREAM_DEP"; sha256sum <tools/compat/surface.py; rustc -V) |
    sha256sum | cut -d' ' -f1)"
cached_key="$(sed -n 's/^# key: //p' "$CACHE" 2>/dev/null || true)"
if [ "$CACHE_MODE" = use ] && [ "$cached_key" = "$cache_key" ]; then
    say "quiche 0.30.0's Rust API: $CACHE (key $cache_key matches)"
    surface_crate upstream "$UPSTREAM_DEP"
    grep -v '^#' "$CACHE" >"$WORK/upstream.txt"
else
    [ "$CACHE_MODE" = use ] &&
        say "$CACHE is stale (key ${cached_key:-none}, want $cache_key): computing the list (run tools/compat/surface.sh --refresh and commit the file)"
    say "quiche 0.30.0's Rust API (rustdoc JSON)"
    rustdoc_json upstream "$UPSTREAM_DEP" "$REPO/target/api-check/upstream" all
    fresh="$WORK/cache.txt"
    {
        echo "# quiche 0.30.0's public Rust items, as tools/compat/surface.py lists them from rustdoc's"
        echo "# JSON output, for tools/compat/surface.sh (the dependency: $UPSTREAM_DEP)."
        echo "# Generated by \`tools/compat/surface.sh --refresh\`; \`--verify\` recomputes it and compares."
        echo "# The key is the SHA-256 of the dependency line, surface.py and \`rustc -V\` ($(rustc -V))."
        echo "# key: $cache_key"
        cat "$WORK/upstream.txt"
    } >"$fresh"
    case "$CACHE_MODE" in
        refresh)
            cp "$fresh" "$CACHE"
            say "wrote $CACHE ($(grep -vc '^#' "$CACHE") items)"
            exit 0
            ;;
        verify)
            if cmp -s "$fresh" "$CACHE"; then
                say "verified: $CACHE is what quiche 0.30.0's rustdoc JSON gives ($(grep -vc '^#' "$CACHE") items)"
                exit 0
            fi
            diff "$CACHE" "$fresh" | head -n 40 >&2 || true
            say "FAIL: $CACHE differs from the computed list (run --refresh and commit it)" >&2
            exit 1
            ;;
    esac
fi
say "ours"
rustdoc_json ours "quiche = { path = \"$REPO/quiche\", features = [\"qlog\", \"custom-client-dcid\"] }" \
    "$TARGET" rustdoc
variants=(ours)
if grep -q '^boringssl-boring-crate *=' quiche/Cargo.toml; then
    say "ours with boringssl-boring-crate"
    rustdoc_json ours-boring "quiche = { path = \"$REPO/quiche\", features = [\"qlog\", \"custom-client-dcid\", \"boringssl-boring-crate\"] }" \
        "$TARGET" rustdoc
    variants+=(ours-boring)
fi

say "quiche.h: quiche 0.30.0's and ours; the symbols of libquiche.a"
QUICHE_SRC="$(cargo metadata --format-version 1 --manifest-path "$WORK/upstream/Cargo.toml" |
    python3 -c 'import json, os, sys
d = json.load(sys.stdin)
print(next(os.path.dirname(p["manifest_path"]) for p in d["packages"]
           if p["name"] == "quiche" and p["version"] == "0.30.0"))')"
python3 tools/compat/surface.py c "$QUICHE_SRC/include/quiche.h" >"$WORK/c-upstream.txt"
python3 tools/compat/surface.py c include/quiche.h >"$WORK/c-ours.txt"
# exported LIB OUT: the quiche_* functions libquiche.a at LIB defines.
exported() {
    nm -g --defined-only "$1" 2>/dev/null |
        awk '$2 == "T" && $3 ~ /^quiche_/ { print "c-fn " $3 }' | sort -u >"$2"
}
tools/ffi-build.sh >/dev/null
exported "$TARGET/release/libquiche.a" "$WORK/c-exported-ours.txt"
if [[ " ${variants[*]} " == *" ours-boring "* ]]; then
    # The feature build of the C API (tools/test.sh makes one in target/debug for ffi-check
    # and names it with QUICHE_BORING_LIBDIR; otherwise it is built here).
    boring_lib="${QUICHE_BORING_LIBDIR:-}"
    if [ -z "$boring_lib" ]; then
        tools/ffi-build.sh --boringssl --debug >/dev/null
        boring_lib="$TARGET/debug"
    fi
    exported "$boring_lib/libquiche.a" "$WORK/c-exported-ours-boring.txt"
fi

status=0
for v in "${variants[@]}"; do
    boring=0
    [ "$v" = ours-boring ] && boring=1
    python3 - "$WORK/upstream.txt" "$WORK/$v.txt" "$WORK/c-upstream.txt" "$WORK/c-ours.txt" \
        "$WORK/c-exported-$v.txt" "$boring" "$ALL" "$v" <<PY || status=1
import re, sys
up, ours, cup, cours, cexp, boring, show_all, variant = sys.argv[1:]
boring, show_all = boring == "1", show_all == "1"
def load(path):
    items = {}
    for line in open(path):
        key, _, sig = line.rstrip("\n").partition("\t")
        items[key] = sig
    return items
exceptions = []
for line in r"""$EXCEPTIONS""".splitlines():
    if line.strip():
        pattern, _, reason = line.partition("\t")
        exceptions.append((re.compile(pattern + "$"), reason.strip()))
boring_only = {l.strip() for l in r"""$BORING_ONLY""".splitlines() if l.strip()}
exported = {l.strip() for l in open(cexp)}
counts = {}
for lang, a, b in (("rust", load(up), load(ours)), ("c", load(cup), load(cours))):
    n = {"items": 0, "present": 0, "missing": 0, "differs": 0, "excepted": 0}
    for key in sorted(a):
        n["items"] += 1
        sig = a[key]
        if key not in b:
            verdict = "missing"
        elif lang == "c" and key.startswith("c-fn ") and key not in exported:
            verdict = "missing"
            sig = "declared, not exported by libquiche.a"
        elif b[key] != sig:
            verdict = "differs"
            sig = "quiche: %s | ours: %s" % (sig, b[key])
        else:
            verdict = "present"
        if verdict != "present":
            reason = next((r for p, r in exceptions if p.match(key)), None)
            if reason is None and key in boring_only and not boring:
                reason = "BoringSSL only: exists with feature boringssl-boring-crate"
            if reason is not None:
                n["excepted"] += 1
                if show_all:
                    print("excepted %-8s %s  (%s)" % (verdict, key, reason))
                continue
        n[verdict] += 1
        if verdict != "present" or show_all:
            print("%-8s %s\t%s" % (verdict, key, sig))
    counts[lang] = n
for lang, n in counts.items():
    print("surface: %s %s: %d items in quiche 0.30.0, %d present, %d missing, %d differ, %d excepted"
          % (variant, lang, n["items"], n["present"], n["missing"], n["differs"], n["excepted"]))
sys.exit(1 if any(n["missing"] or n["differs"] for n in counts.values()) else 0)
PY
done
say "done"
exit $status
