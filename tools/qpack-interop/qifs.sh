#!/usr/bin/env bash
# Decodes the QPACK offline-interop corpus that the implementations published (the qpackers
# "qifs" repository: QIF inputs in qifs/, other encoders' outputs in encoded/qpack-*/ENCODER/)
# with our decoder, and compares every decoded file with the QIF it came from.
#
# Usage: tools/qpack-interop/qifs.sh [QIFS_DIR]
#   QIFS_DIR: a checkout of the corpus. Without it the script clones it (git, depth 1) into
#   target/qpack-interop/qifs, which needs github.com to be reachable.
# Encoded files are named NAME.out.TABLE.BLOCKED.ACK (ACK 1: made with immediate
# acknowledgments); each is decoded with our tool at TABLE and BLOCKED, in the offline-interop
# convention (the table starts at TABLE: these encoders begin with insertions), and the lists
# are compared with qifs/NAME.qif in any order. One line per file, then `N passed, M failed`;
# the exit status is non-zero on any failure. QIF_REPO overrides the repository's address.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cd "$root"
build="${CARGO_TARGET_DIR:-$root/target}/qpack-interop"
mkdir -p "$build"

if [ "$#" -gt 0 ]; then
    qifs="$1"
else
    qifs="$build/qifs"
    if [ ! -d "$qifs/.git" ]; then
        repo="${QIF_REPO:-https://github.com/qpackers/qifs}"
        echo "cloning $repo into $qifs"
        if ! timeout 120 git clone --quiet --depth 1 "$repo" "$qifs" 2>"$build/qifs-clone.log"; then
            echo "qifs: cannot clone $repo ($(tail -n 1 "$build/qifs-clone.log")); pass a checkout as QIFS_DIR" >&2
            exit 2
        fi
    fi
fi
{ [ -d "$qifs/qifs" ] && [ -d "$qifs/encoded" ]; } || {
    echo "qifs: $qifs has no qifs/ and encoded/ directories" >&2
    exit 2
}

cargo build --release --quiet -p qpack-interop
ours="${CARGO_TARGET_DIR:-$root/target}/release/qpack-interop"
work="$build/qifs-decoded"
rm -rf "$work"
mkdir -p "$work"

passed=0
failed=0
skipped=0
while IFS= read -r -d '' file; do
    base="$(basename "$file")"
    encoder="$(basename "$(dirname "$file")")"
    # NAME.out.TABLE.BLOCKED.ACK
    if [[ ! "$base" =~ ^(.+)\.out\.([0-9]+)\.([0-9]+)\.([01])$ ]]; then
        skipped=$((skipped + 1))
        continue
    fi
    name="${BASH_REMATCH[1]}" table="${BASH_REMATCH[2]}" blocked="${BASH_REMATCH[3]}"
    source="$qifs/qifs/$name.qif"
    label="$encoder/$base"
    if [ ! -f "$source" ]; then
        skipped=$((skipped + 1))
        printf 'SKIP %-52s no qifs/%s.qif\n' "$label" "$name"
        continue
    fi
    out="$work/$encoder-$base.qif"
    if ! timeout 60 "$ours" decode --table-size "$table" --max-blocked "$blocked" "$file" "$out" \
            2>"$out.err"; then
        failed=$((failed + 1))
        printf 'FAIL %-52s %s\n' "$label" "$(head -c 200 "$out.err")"
    elif ! "$ours" compare --any-order "$source" "$out" 2>"$out.err"; then
        failed=$((failed + 1))
        printf 'FAIL %-52s %s\n' "$label" "$(head -c 200 "$out.err")"
    else
        passed=$((passed + 1))
        printf 'PASS %-52s\n' "$label"
    fi
done < <(find "$qifs/encoded" -path '*/qpack-*/*' -type f -print0 | sort -z)
echo "$passed passed, $failed failed ($skipped files not in the NAME.out.TABLE.BLOCKED.ACK form or without their QIF)"
[ "$failed" = 0 ] && [ "$passed" -gt 0 ]
