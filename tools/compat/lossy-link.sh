#!/usr/bin/env bash
# Loss recovery at near-zero RTT, quiche 0.30.0 against ours (issue 31, item 5): the program
# tools/compat/api-check/src/bin/lossy_link.rs, built on each library, moves SIZE bytes from
# server to client in one thread through an in-memory link with no delay and 5 % random loss
# in the data direction, CUBIC on both ends, for seeds 1-5; the two builds alternate, RUNS times.
# Per library: medians over every seed and run of the transfer time, the time spent inside the
# libraries' calls (work) and asleep waiting for a timer (wait), the client's packets (ACKs)
# and retransmitted packets per lost packet.
#
#   tools/compat/lossy-link.sh                 # release builds, 20 MB, seeds 1-5, 3 runs each
#   tools/compat/lossy-link.sh --ci            # CI's short version (below)
#   tools/compat/lossy-link.sh --size 5000000 --runs 1 --seeds 1,2
#
# Release mode fails when ours' median time is above quiche's. --ci reuses the unoptimized
# builds tools/compat/api-check.sh made (no build of its own), 5 MB, one run: unoptimized, the
# time is CPU, not recovery, so it checks what does not depend on the build: ours waits on
# timers no longer than quiche (median wait, plus 50 ms) and resends at most 1.05 packets per
# lost packet. Needs what api-check.sh needs (quiche 0.30.0 links tools/boringssl's BoringSSL).
set -euo pipefail
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
cd "$REPO"
CRATE="$REPO/tools/compat/api-check/Cargo.toml"
CERTS="$REPO/quiche/tests/certs"
say() { echo "lossy-link: $*"; }

MODE=release
SIZE=20000000
SEEDS=1,2,3,4,5
RUNS=3
while [ $# -gt 0 ]; do
    case "$1" in
        --ci) MODE=ci; SIZE=5000000; RUNS=1; shift ;;
        --size) SIZE="$2"; shift 2 ;;
        --seeds) SEEDS="$2"; shift 2 ;;
        --runs) RUNS="$2"; shift 2 ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "lossy-link.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done

if [ "$MODE" = release ]; then
    say "building on ours (release)"
    cargo build --release --quiet --manifest-path "$CRATE" --features ours --bin quiche-lossy-link \
        --target-dir "$TARGET"
    say "building on quiche 0.30.0 (release, on the BoringSSL of tools/boringssl/build.sh)"
    (
        eval "$(tools/boringssl/build.sh --env)"
        # The same RUSTC_BOOTSTRAP as api-check.sh and surface.sh: one cached build of quiche.
        RUSTC_BOOTSTRAP=1 cargo build --release --quiet --manifest-path "$CRATE" --features upstream \
            --bin quiche-lossy-link --target-dir "$REPO/target/api-check/upstream"
    )
    OURS="$TARGET/release/quiche-lossy-link"
    UPSTREAM="$REPO/target/api-check/upstream/release/quiche-lossy-link"
else
    OURS="$TARGET/debug/quiche-lossy-link"
    UPSTREAM="$REPO/target/api-check/upstream/debug/quiche-lossy-link"
fi
for bin in "$OURS" "$UPSTREAM"; do
    [ -x "$bin" ] || { echo "lossy-link.sh: $bin is missing (--ci: run tools/compat/api-check.sh first)" >&2; exit 1; }
done

results="$(mktemp "${TMPDIR:-/tmp}/lossy-link.XXXXXX")"
cleanup_dir "$results"
say "$SIZE bytes, 5 % loss server -> client, no delay, seeds $SEEDS, $RUNS run(s) each, alternating (load $(cut -d' ' -f1 /proc/loadavg))"
for run in $(seq "$RUNS"); do
    order="upstream ours"
    [ $((run % 2)) = 0 ] && order="ours upstream"
    for lib in $order; do
        bin="$OURS"
        [ "$lib" = upstream ] && bin="$UPSTREAM"
        timeout 300 "$bin" "$CERTS" --size "$SIZE" --seeds "$SEEDS" | sed "s/^/lib=$lib run=$run /" | tee -a "$results"
    done
done

python3 - "$results" "$MODE" <<'EOF'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    kv = dict(f.split("=", 1) for f in line.split())
    rows.setdefault(kv["lib"], []).append(kv)
cols = ["secs", "work_s", "wait_s", "client_sent", "server_sent", "retrans_per_loss"]
med = {lib: {c: statistics.median(float(r[c]) for r in rs) for c in cols} for lib, rs in rows.items()}
print("\nmedian over seeds and runs   " + " ".join("%14s" % c for c in cols))
for lib in ("upstream", "ours"):
    name = "quiche 0.30.0" if lib == "upstream" else "ours"
    print("%-28s " % name + " ".join("%14.4g" % med[lib][c] for c in cols))
print("%-28s " % "ours/quiche" + " ".join("%14.2f" % (med["ours"][c] / med["upstream"][c]) if med["upstream"][c] else "%14s" % "-" for c in cols))
fail = []
if sys.argv[2] == "release":
    if med["ours"]["secs"] > med["upstream"]["secs"]:
        fail.append("ours' median time is above quiche's")
else:
    if med["ours"]["wait_s"] > med["upstream"]["wait_s"] + 0.05:
        fail.append("ours waits on timers longer than quiche (median + 50 ms)")
    if med["ours"]["retrans_per_loss"] > 1.05:
        fail.append("ours resends more than 1.05 packets per lost packet")
for f in fail:
    print("lossy-link: FAIL: " + f)
sys.exit(1 if fail else 0)
EOF
