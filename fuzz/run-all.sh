#!/usr/bin/env bash
# Runs every fuzz target for SECONDS (default 10) each, one after the other, with a kept corpus
# in fuzz/corpus/<target> (seeded from fuzz/seeds/<target> when present), and prints the
# executions and findings of each. Exits non-zero when any target found a crash.
#
# Works on a stable toolchain: cargo-fuzz needs nightly flags, which RUSTC_BOOTSTRAP=1 allows.
# Installs the pinned cargo-fuzz when it is missing.
set -euo pipefail
SECS="${1:-10}"
CARGO_FUZZ_VERSION="0.13.2"
cd "$(dirname "$0")"
export RUSTC_BOOTSTRAP=1
if ! cargo fuzz --version >/dev/null 2>&1; then
    cargo install cargo-fuzz --version "$CARGO_FUZZ_VERSION" --locked
fi
targets=$(cargo fuzz list)
failed=0
summary=()
for t in $targets; do
    mkdir -p "corpus/$t" "artifacts/$t"
    if [ -d "seeds/$t" ]; then
        cp -n "seeds/$t"/* "corpus/$t/" 2>/dev/null || true
    fi
    log="artifacts/$t/last-run.log"
    status=ok
    if ! cargo fuzz run -O "$t" "corpus/$t" -- -max_total_time="$SECS" \
        -artifact_prefix="artifacts/$t/" -print_final_stats=1 >"$log" 2>&1; then
        status=FOUND
        failed=1
    fi
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
    crashes=$(find "artifacts/$t" -name 'crash-*' -o -name 'leak-*' -o -name 'oom-*' -o -name 'timeout-*' | wc -l)
    summary+=("$(printf '%-18s %-6s execs=%-10s artifacts=%s' "$t" "$status" "${execs:-?}" "$crashes")")
    echo "${summary[-1]}"
done
echo "---"
printf '%s\n' "${summary[@]}"
exit $failed
