# shellcheck shell=bash
# Sourced by tools/bench/run.sh: `--compare REF` builds our apps at REF in a git worktree, so that
# run.sh alternates its transfers with the working tree's in one sitting.
#
# Needs from run.sh: REPO, die, step. Sets REF_SHA, REF_NAME and REF_DIR (quiche-server and
# quiche-client of REF).

COMPARE_BUILD="$REPO/tools/bench/.build/compare"

# Resolves $1 to a commit and builds quiche-apps there (release). The worktree and the target
# directory are kept between runs: building another REF later is incremental.
compare_build() {
    local ref="$1" src="$COMPARE_BUILD/src" target="$COMPARE_BUILD/target"
    REF_SHA="$(git -C "$REPO" rev-parse --verify --quiet "$ref^{commit}")" \
        || die "--compare $ref: not a commit of this repository"
    REF_NAME="$(git -C "$REPO" rev-parse --short=12 "$REF_SHA")"
    REF_DIR="$COMPARE_BUILD/bin-$REF_NAME"
    if [ -x "$REF_DIR/quiche-server" ] && [ -x "$REF_DIR/quiche-client" ]; then
        step "our apps at $ref ($REF_NAME): already built in $REF_DIR"
        return
    fi
    step "building our apps at $ref ($REF_NAME) in a worktree ($src), release"
    mkdir -p "$COMPARE_BUILD"
    # A worktree this script made earlier is reused; a stale registration (its folder deleted)
    # is pruned first.
    git -C "$REPO" worktree prune
    if [ -e "$src/.git" ]; then
        git -C "$src" checkout --quiet --detach "$REF_SHA"
    else
        git -C "$REPO" worktree add --quiet --detach "$src" "$REF_SHA"
    fi
    # Cargo.lock is not in git: the REF's build resolves its manifests' pinned versions afresh.
    (cd "$src" && cargo build --release --quiet -p quiche-apps --target-dir "$target") \
        || die "--compare $ref: the build failed"
    mkdir -p "$REF_DIR"
    install -m 0755 "$target/release/quiche-server" "$target/release/quiche-client" "$REF_DIR/"
}
