#!/usr/bin/env bash
# A/B of our encoder's time per header list: this tree's library against BASE_REV's, both
# built with the same harness (examples/encbench.rs: 4096/100, every section acknowledged at
# once, only the time inside `Encoder::encode` counted, per list the best of ROUNDS rounds),
# run alternately PAIRS times in one sitting. Prints per corpus file the best of each side and
# after/before, with `uptime`'s load before and after.
#
# Usage: tools/qpack-interop/encode_ab.sh BASE_REV [ROUNDS [PAIRS]] [-- CORPUS.qif...]
#   Default corpus: every profile of gen_corpus.py (generated under target/qpack-interop).
#   BASE_REV must have tools/qpack-interop and the same Encoder/Decoder API.
set -euo pipefail
[ "$#" -ge 1 ] || { sed -n '2,10p' "$0"; exit 2; }
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cd "$root"
base_rev="$1"; shift
rounds=20 pairs=5
[ "$#" -gt 0 ] && [ "$1" != -- ] && { rounds="$1"; shift; }
[ "$#" -gt 0 ] && [ "$1" != -- ] && { pairs="$1"; shift; }
[ "$#" -gt 0 ] && [ "$1" = -- ] && shift
target="${CARGO_TARGET_DIR:-$root/target}"
build="$target/qpack-interop/ab"
mkdir -p "$build"

if [ "$#" -gt 0 ]; then
    corpus=("$@")
else
    python3 "$here/gen_corpus.py" "$build/corpus" >/dev/null
    corpus=("$build"/corpus/*.qif)
fi

# The baseline: an export of BASE_REV with this tree's harness, in its own target directory.
rm -rf "$build/base"
mkdir -p "$build/base"
git archive "$base_rev" | tar -x -C "$build/base"
mkdir -p "$build/base/tools/qpack-interop/examples"
cp "$here/examples/encbench.rs" "$build/base/tools/qpack-interop/examples/"
(cd "$build/base" && CARGO_TARGET_DIR="$build/base-target" \
    cargo build --release --quiet -p qpack-interop --example encbench)
cargo build --release --quiet -p qpack-interop --example encbench
cp "$build/base-target/release/examples/encbench" "$build/before"
cp "$target/release/examples/encbench" "$build/after"

echo "load before: $(uptime)"
rm -f "$build"/before.*.txt "$build"/after.*.txt
for i in $(seq "$pairs"); do
    timeout 600 "$build/before" "$rounds" "${corpus[@]}" >"$build/before.$i.txt"
    timeout 600 "$build/after" "$rounds" "${corpus[@]}" >"$build/after.$i.txt"
done
echo "load after: $(uptime)"
printf '%-24s %12s %12s %8s\n' corpus "before (us)" "after (us)" ratio
best() { awk -F '\t' '!($1 in m) || $2 < m[$1] { m[$1] = $2 } END { for (f in m) print f "\t" m[f] }' "$@" | sort; }
best "$build"/before.*.txt >"$build/before.best"
best "$build"/after.*.txt >"$build/after.best"
join -t $'\t' "$build/before.best" "$build/after.best" \
    | awk -F '\t' '{ printf "%-24s %12.2f %12.2f %8.2f\n", $1, $2, $3, $3 / $2 }'
