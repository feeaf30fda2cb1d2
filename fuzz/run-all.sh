#!/usr/bin/env bash
# Builds every fuzz target once and runs each for SECONDS (default 10), one after the other,
# printing the executions, coverage and findings of each. Exits non-zero when any target found
# a crash (the input is in fuzz/artifacts/<target>/).
#
#     fuzz/run-all.sh [SECONDS] [--ci]
#
# Without --ci: an optimized build with debug assertions, and the kept corpus fuzz/corpus/<target>
# (seeded from fuzz/seeds/<target>). With --ci (tools/test.sh): an unoptimized build, which
# compiles in a fraction of the time, and a fresh corpus from the seeds in a temporary
# directory, so that nothing is kept between runs.
#
# No sanitizer: the library is safe Rust outside FFI and sockets (which no target reaches), and
# its overflow and bounds checks panic with debug assertions on; AddressSanitizer would add
# minutes of build and halve the executions. Extra libFuzzer flags of a target are read from
# fuzz/options/<target>.
#
# Works on a stable toolchain: cargo-fuzz needs nightly flags, which RUSTC_BOOTSTRAP=1 allows.
# Installs the pinned cargo-fuzz when it is missing.
set -euo pipefail
SECS=10
CI=0
for arg in "$@"; do
    case "$arg" in
    --ci) CI=1 ;;
    *) SECS="$arg" ;;
    esac
done
CARGO_FUZZ_VERSION="0.13.2"
TRIPLE="x86_64-unknown-linux-gnu"
cd "$(dirname "$0")"
export RUSTC_BOOTSTRAP=1
if ! cargo fuzz --version >/dev/null 2>&1; then
    cargo install cargo-fuzz --version "$CARGO_FUZZ_VERSION" --locked
fi
if [ "$CI" = 1 ]; then
    cargo fuzz build -s none --dev
    bin="target/$TRIPLE/debug"
    scratch=$(mktemp -d)
    trap 'rm -rf "$scratch"' EXIT
else
    cargo fuzz build -s none -O -a
    bin="target/$TRIPLE/release"
fi
targets=$(cargo fuzz list)
failed=0
summary=()
for t in $targets; do
    if [ "$CI" = 1 ]; then
        corpus="$scratch/$t"
    else
        corpus="corpus/$t"
    fi
    mkdir -p "$corpus" "artifacts/$t"
    if [ -d "seeds/$t" ]; then
        cp -n "seeds/$t"/* "$corpus/" 2>/dev/null || true
    fi
    opts=()
    if [ -f "options/$t" ]; then
        read -r -a opts <"options/$t"
    fi
    log="artifacts/$t/last-run.log"
    status=ok
    if ! "$bin/$t" "$corpus" -max_total_time="$SECS" -timeout=30 "${opts[@]}" \
        -artifact_prefix="artifacts/$t/" -print_final_stats=1 >"$log" 2>&1; then
        status=FOUND
        failed=1
        grep -E 'panicked|ERROR|Test unit written' "$log" | head -5 || true
    fi
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1 || true)
    cov=$(grep -E '^#[0-9]+.*cov: ' "$log" | tail -1 | grep -o 'cov: [0-9]* ft: [0-9]*' || true)
    summary+=("$(printf '%-16s %-6s execs=%-9s %s' "$t" "$status" "${execs:-?}" "$cov")")
    echo "${summary[-1]}"
done
echo "---"
printf '%s\n' "${summary[@]}"
exit $failed
