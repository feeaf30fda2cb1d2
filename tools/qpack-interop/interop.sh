#!/usr/bin/env bash
# QPACK offline interop between our encoder/decoder (qpack-interop) and ls-qpack (pylsqpack):
# for every table size, blocked-streams limit and acknowledgement mode, ours encodes and
# ls-qpack decodes, ls-qpack encodes and ours decodes, and ours encodes and decodes; every
# decoded header list must equal the corpus. One line per case, then `N passed, M failed`;
# the exit status is non-zero on any failure.
#
# Usage: tools/qpack-interop/interop.sh [CORPUS.qif...]   (default: the committed corpus)
# Installs pylsqpack 1.0.0 itself when missing (in a venv under target/ if pip refuses to
# install into the system Python).
set -euo pipefail
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
here="$REPO/tools/qpack-interop"
cd "$REPO"

build="$TARGET/qpack-interop"
mkdir -p "$build"
export PYTHONDONTWRITEBYTECODE=1

# --- pylsqpack -------------------------------------------------------------------------------
has_pylsqpack() {
    "$1" -c 'import sys, pylsqpack; sys.exit(pylsqpack.__version__ != "1.0.0")' 2>/dev/null
}
py=python3
if ! has_pylsqpack "$py"; then
    if [ -x "$build/venv/bin/python" ] && has_pylsqpack "$build/venv/bin/python"; then
        py="$build/venv/bin/python"
    else
        echo "installing pylsqpack 1.0.0"
        if ! python3 -m pip install --quiet pylsqpack==1.0.0 2>"$build/pip.log"; then
            # An externally managed Python (PEP 668) refuses: use a venv of our own.
            echo "pip refused the system Python ($(tail -n 1 "$build/pip.log")); using a venv"
            python3 -m venv "$build/venv"
            "$build/venv/bin/python" -m pip install --quiet pylsqpack==1.0.0
            py="$build/venv/bin/python"
        fi
        has_pylsqpack "$py" || { echo "pylsqpack 1.0.0 is not importable" >&2; exit 1; }
    fi
fi

# --- our tool --------------------------------------------------------------------------------
build_packages release qpack-interop
ours="$TARGET/release/qpack-interop"
ls_tool="$here/pylsqpack_tool.py"

# --- corpus: the committed one, checked against a fresh run of the generator ------------------
if [ "$#" -gt 0 ]; then
    corpus=("$@")
else
    "$py" "$here/gen_corpus.py" "$build/corpus" >/dev/null
    for f in news-requests.qif news-responses.qif; do
        if ! cmp -s "$build/corpus/$f" "$here/corpus/$f"; then
            echo "FAIL corpus: gen_corpus.py no longer produces corpus/$f (regenerate it)" >&2
            exit 1
        fi
    done
    corpus=("$here/corpus/news-requests.qif" "$here/corpus/news-responses.qif")
fi

passed=0
failed=0
work="$build/cases"
rm -rf "$work"
mkdir -p "$work"

# encode_with TOOL TABLE BLOCKED ACK IN OUT / decode_with TOOL TABLE BLOCKED IN OUT
encode_with() {
    local tool="$1" t="$2" b="$3" ack="$4" in="$5" out="$6" flag=()
    [ "$ack" = ack ] && flag=(--immediate-ack)
    if [ "$tool" = ours ]; then
        "$ours" encode --table-size "$t" --max-blocked "$b" "${flag[@]}" "$in" "$out"
    else
        "$py" "$ls_tool" encode --table-size "$t" --max-blocked "$b" "${flag[@]}" "$in" "$out"
    fi
}
decode_with() {
    local tool="$1" t="$2" b="$3" in="$4" out="$5"
    if [ "$tool" = ours ]; then
        "$ours" decode --table-size "$t" --max-blocked "$b" "$in" "$out"
    else
        "$py" "$ls_tool" decode --table-size "$t" --max-blocked "$b" "$in" "$out"
    fi
}

start=$SECONDS
for pair in ours:lsqpack lsqpack:ours ours:ours; do
    enc="${pair%%:*}"
    dec="${pair##*:}"
    for t in 0 256 4096 65536; do
        for b in 0 100; do
            for ack in ack noack; do
                name="$enc->$dec table=$t blocked=$b $ack"
                detail=""
                ok=1
                for src in "${corpus[@]}"; do
                    base="$work/$enc-$dec-$t-$b-$ack-$(basename "$src" .qif)"
                    if ! encode_with "$enc" "$t" "$b" "$ack" "$src" "$base.out" 2>"$base.err"; then
                        detail+=" $(basename "$src"): encode failed: $(head -c 200 "$base.err")"
                        ok=0
                        continue
                    fi
                    if ! decode_with "$dec" "$t" "$b" "$base.out" "$base.qif" 2>"$base.err"; then
                        detail+=" $(basename "$src"): decode failed: $(head -c 200 "$base.err")"
                        ok=0
                        continue
                    fi
                    if ! "$ours" compare "$src" "$base.qif" 2>"$base.err"; then
                        detail+=" $(basename "$src"): $(head -c 200 "$base.err")"
                        ok=0
                        continue
                    fi
                    detail+=" $(basename "$src" .qif)=$(stat -c %s "$base.out")B"
                done
                if [ "$ok" = 1 ]; then
                    passed=$((passed + 1))
                    printf 'PASS %-38s%s\n' "$name" "$detail"
                else
                    failed=$((failed + 1))
                    printf 'FAIL %-38s%s\n' "$name" "$detail"
                fi
            done
        done
    done
done
echo "(file sizes include 12 bytes of block framing per block; $((SECONDS - start)) s)"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
