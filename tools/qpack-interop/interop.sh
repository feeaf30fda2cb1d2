#!/usr/bin/env bash
# QPACK offline interop between our encoder/decoder (qpack-interop) and ls-qpack (pylsqpack):
# for every table size, blocked-streams limit and acknowledgement mode, ours encodes and
# ls-qpack decodes, ls-qpack encodes and ours decodes, and ours encodes and decodes; every
# decoded header list must equal the corpus. Then the same in the style of the files published
# for the offline interop (insertions first, no Set Dynamic Table Capacity), which our decoder
# must read by default and refuse with --strict-start; qifs.sh on a tree of such files laid out
# as the published corpus; and the compression checks of `qpack-interop bench` on every
# generated corpus. One line per case, then `N passed, M failed`; the exit status is non-zero
# on any failure.
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

# --- corpora: every profile generated; the committed one checked against it ------------------
rm -rf "$build/corpus"
"$py" "$here/gen_corpus.py" "$build/corpus" >/dev/null
for f in news-requests.qif news-responses.qif; do
    if ! cmp -s "$build/corpus/$f" "$here/corpus/$f"; then
        echo "FAIL corpus: gen_corpus.py no longer produces corpus/$f (regenerate it)" >&2
        exit 1
    fi
done
generated=("$build"/corpus/*.qif)
if [ "$#" -gt 0 ]; then
    corpus=("$@")
else
    corpus=("$here/corpus/news-requests.qif" "$here/corpus/news-responses.qif")
fi

passed=0
failed=0
work="$build/cases"
rm -rf "$work"
mkdir -p "$work"

# encode_with TOOL TABLE BLOCKED ACK IN OUT [--no-set-capacity] / decode_with TOOL TABLE BLOCKED IN OUT
encode_with() {
    local tool="$1" t="$2" b="$3" ack="$4" in="$5" out="$6" flag=("${@:7}")
    [ "$ack" = ack ] && flag+=(--immediate-ack)
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

# record OK NAME DETAIL: counts the case and prints its line.
record() {
    if [ "$1" = 1 ]; then
        passed=$((passed + 1))
        printf 'PASS %-52s%s\n' "$2" "$3"
    else
        failed=$((failed + 1))
        printf 'FAIL %-52s%s\n' "$2" "$3"
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
                record "$ok" "$name" "$detail"
            done
        done
    done
done

# --- the offline interop's style: insertions first, no Set Dynamic Table Capacity ------------
mock="$build/mock-qifs"
rm -rf "$mock"
mkdir -p "$mock/qifs"
for enc in ours lsqpack; do
    dir="$mock/encoded/qpack-05/$enc"
    mkdir -p "$dir"
    for t in 256 4096; do
        for b in 0 100; do
            for ack in ack noack; do
                name="$enc (offline style) table=$t blocked=$b $ack"
                detail=""
                ok=1
                for src in "${corpus[@]}"; do
                    stem="$(basename "$src" .qif)"
                    cp "$src" "$mock/qifs/$stem.qif"
                    out="$dir/$stem.out.$t.$b.$([ "$ack" = ack ] && echo 1 || echo 0)"
                    if ! encode_with "$enc" "$t" "$b" "$ack" "$src" "$out" --no-set-capacity \
                            2>"$out.err"; then
                        detail+=" $stem: encode failed: $(head -c 200 "$out.err")"
                        ok=0
                        continue
                    fi
                    rm -f "$out.err"
                    for dec in ours lsqpack; do
                        got="$work/offline-$enc-$dec-$t-$b-$ack-$stem.qif"
                        if ! decode_with "$dec" "$t" "$b" "$out" "$got" 2>"$got.err" \
                                || ! "$ours" compare "$src" "$got" 2>>"$got.err"; then
                            detail+=" $stem: $dec: $(head -c 200 "$got.err")"
                            ok=0
                        fi
                    done
                    # RFC 9204's rule refuses an insertion before Set Dynamic Table Capacity.
                    if [ "$t" = 4096 ] && [ "$ack" = ack ] \
                            && "$ours" decode --strict-start --table-size "$t" --max-blocked "$b" \
                                "$out" "$work/strict.qif" 2>/dev/null; then
                        detail+=" $stem: --strict-start decoded it"
                        ok=0
                    fi
                    detail+=" $stem=$(stat -c %s "$out")B"
                done
                record "$ok" "$name" "$detail"
            done
        done
    done
done

# qifs.sh on that tree, laid out as the published corpus.
if "$here/qifs.sh" "$mock" >"$build/qifs-mock.log" 2>&1; then
    record 1 "qifs.sh on the offline-style files" " $(tail -n 1 "$build/qifs-mock.log")"
else
    record 0 "qifs.sh on the offline-style files" " $(grep -v '^PASS' "$build/qifs-mock.log" | head -c 400)"
fi

# --- compression checks on every generated corpus ---------------------------------------------
bench_log="$build/bench.log"
if "$ours" bench --repeat 1 --setting 4096/100 --lsqpack "$ls_tool" "${generated[@]}" \
        >"$bench_log" 2>&1 \
        && grep -q '^  no field name costs more than with the static table alone: met$' "$bench_log" \
        && grep -q '^  ours <= ls-qpack on every file: met$' "$bench_log"; then
    record 1 "compression at 4096/100 with immediate acks" \
        " on ${#generated[@]} files: $(grep -E '^  (ours|no field)' "$bench_log" | tr -s ' ' | tr '\n' ';')"
else
    record 0 "compression at 4096/100 with immediate acks" \
        " $(grep -E '^  (ours|no field)|rror' "$bench_log" | head -c 600)"
fi

echo "(file sizes include 12 bytes of block framing per block; $((SECONDS - start)) s)"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
