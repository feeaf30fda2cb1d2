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
# quiche 0.30.0 needs BoringSSL: the rustdoc runs link the copy tools/boringssl/build.sh
# builds once per run, in target/api-check/upstream, the target directory
# tools/compat/api-check.sh builds quiche 0.30.0 in, with the same settings: run after it,
# this script compiles only what rustdoc needs beyond that build.
#
#   tools/compat/surface.sh [--all]     # --all also prints the matches and the exceptions
set -euo pipefail
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
cd "$REPO"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/quiche-surface.XXXXXX")"
cleanup_dir "$WORK"
start=$SECONDS
say() { echo "surface: [$((SECONDS - start)) s] $*"; }
ALL=0
[ "${1:-}" = "--all" ] && ALL=1

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

# rustdoc JSON of one `quiche` dependency: $1 a name, $2 the dependency line, $3 the target
# directory. The crate around it exists only to name the dependency with its features.
rustdoc_json() {
    local name="$1" dep="$2" target="$3"
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
    local version
    version="$(cargo metadata --format-version 1 --manifest-path "$WORK/$name/Cargo.toml" |
        python3 -c 'import json, sys
d = json.load(sys.stdin)
print(next(p["version"] for p in d["packages"] if p["name"] == "quiche"))')"
    # BoringSSL comes from tools/boringssl/build.sh, as for tools/compat/api-check.sh, whose
    # target directory (and RUSTC_BOOTSTRAP=1) this shares: nothing is built twice in a run.
    (
        eval "$(tools/boringssl/build.sh --env)"
        RUSTC_BOOTSTRAP=1 timeout 7200 cargo rustdoc --quiet -p "quiche@$version" \
            --manifest-path "$WORK/$name/Cargo.toml" --target-dir "$target" \
            -- -Z unstable-options --output-format json --cap-lints allow
    )
    cp "$target/doc/quiche.json" "$WORK/$name.json"
    python3 tools/compat/surface.py rust "$WORK/$name.json" >"$WORK/$name.txt"
}

say "quiche 0.30.0's Rust API (rustdoc JSON)"
rustdoc_json upstream 'quiche = { version = "=0.30.0", features = ["qlog", "custom-client-dcid"] }' \
    "$REPO/target/api-check/upstream"
say "ours"
rustdoc_json ours "quiche = { path = \"$REPO/quiche\", features = [\"qlog\", \"custom-client-dcid\"] }" \
    "$REPO/target/api-check/ours"
variants=(ours)
if grep -q '^boringssl-boring-crate *=' quiche/Cargo.toml; then
    say "ours with boringssl-boring-crate"
    rustdoc_json ours-boring "quiche = { path = \"$REPO/quiche\", features = [\"qlog\", \"custom-client-dcid\", \"boringssl-boring-crate\"] }" \
        "$REPO/target/api-check/upstream"
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
