#!/usr/bin/env bash
# Installs the interop peers into tools/interop/.build/ from the package registries only:
#   aioquic   PyPI             -> .build/venv (a virtualenv)
#   quic-go   Go module proxy  -> .build/bin/quic-go-peer  (quic-go-peer/go.mod + go.sum pin it)
#   quinn     Cargo registry   -> .build/bin/quinn-peer    (quinn-peer/Cargo.toml pins it with =)
#   ngtcp2    Debian packages  -> gtlsclient, gtlsserver   (ngtcp2-client, ngtcp2-server; when root)
# Idempotent: a second run only checks and rebuilds what changed.
set -euo pipefail
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
HERE="$REPO/tools/interop"
BUILD="$INTEROP_BUILD"
AIOQUIC_VERSION="1.7.2"
mkdir -p "$BUILD/bin"

step() { printf '== %s\n' "$*"; }
die() { echo "setup.sh: $*" >&2; exit 1; }

# ---- toolchains: the machine provides them; say clearly what is missing.
command -v python3 >/dev/null || die "python3 is missing"
python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
    || die "aioquic $AIOQUIC_VERSION needs Python >= 3.11 (have $(python3 --version))"
command -v go >/dev/null || die "go is missing"
# quic-go's go.mod asks for Go 1.26; never let the go command fetch a toolchain itself.
export GOTOOLCHAIN=local
go_minor="$(go env GOVERSION | sed -E 's/^go1\.([0-9]+).*/\1/')"
[ "$go_minor" -ge 26 ] 2>/dev/null || die "quic-go needs Go >= 1.26 (have $(go env GOVERSION))"
command -v cargo >/dev/null || die "cargo is missing"

# ---- aioquic
step "aioquic $AIOQUIC_VERSION (PyPI)"
VENV="$BUILD/venv"
if [ ! -x "$VENV/bin/python" ]; then
    python3 -m venv "$VENV"
fi
have="$("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("aioquic"))' 2>/dev/null || true)"
if [ "$have" != "$AIOQUIC_VERSION" ]; then
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "aioquic==$AIOQUIC_VERSION"
fi
"$VENV/bin/python" -c 'import aioquic' || die "aioquic does not import"

# ---- quic-go
step "quic-go peer (Go module proxy)"
build_peer quic-go

# ---- quinn
step "quinn peer (Cargo registry)"
build_peer quinn

# ---- Debian packages (only when missing; apt-get update at most once per run).
apt_updated=0
apt_install() {
    [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null || return 1
    export DEBIAN_FRONTEND=noninteractive
    if [ "$apt_updated" = 0 ]; then
        apt-get update -qq || return 1
        apt_updated=1
    fi
    apt-get install -y -qq "$@" >/dev/null
}

# tshark/dumpcap: not needed by the peers, but run.sh checks the decrypted packet trace of
# each test with them (as tools/test.sh does, from Debian's packages).
if ! command -v tshark >/dev/null || ! command -v dumpcap >/dev/null; then
    step "tshark (Debian packages)"
    [ "$(id -u)" = 0 ] && { echo "wireshark-common wireshark-common/install-setuid boolean false" \
        | debconf-set-selections || true; }
    apt_install tshark \
        || echo "setup.sh: could not install tshark (needs root and apt-get): run.sh will skip its wire checks" >&2
fi

# ngtcp2: Debian's example client and server (ngtcp2 0.12.1 with nghttp3 and GnuTLS), used
# through ngtcp2-peer.sh. Not fatal: only the ngtcp2 peer needs them.
NGTCP2_VERSION_PREFIX="0.12.1"
if ! command -v gtlsclient >/dev/null || ! PATH="$PATH:/usr/sbin" command -v gtlsserver >/dev/null; then
    step "ngtcp2 (Debian packages ngtcp2-client, ngtcp2-server)"
    apt_install ngtcp2-client ngtcp2-server \
        || echo "setup.sh: could not install ngtcp2-client/ngtcp2-server (needs root and apt-get): the ngtcp2 peer is missing" >&2
fi
ngtcp2_version=""
command -v gtlsclient >/dev/null \
    && ngtcp2_version="$(dpkg-query -W -f '${Version}' ngtcp2-client 2>/dev/null || true)"
case "$ngtcp2_version" in
    "" | "$NGTCP2_VERSION_PREFIX"*) ;;
    *) echo "setup.sh: note: ngtcp2-client is $ngtcp2_version, the notes and matrix were made with $NGTCP2_VERSION_PREFIX" >&2 ;;
esac

# ---- report
quicgo_version="$(go version -m "$BUILD/bin/quic-go-peer" | awk '$2 == "github.com/quic-go/quic-go" { print $3 }')"
crate_version() {
    awk -v name="$1" '$1 == "name" && $3 == "\"" name "\"" { getline; gsub(/"/, "", $3); print $3; exit }' \
        "$HERE/quinn-peer/Cargo.lock"
}
echo
echo "installed in $BUILD:"
printf '  %-8s %-26s %s\n' \
    aioquic "$("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("aioquic"))')" \
        "$VENV/bin/python $HERE/aioquic_peer.py" \
    quic-go "$quicgo_version" "$BUILD/bin/quic-go-peer" \
    quinn "$(crate_version quinn) (rustls $(crate_version rustls))" "$BUILD/bin/quinn-peer"
if [ -n "$ngtcp2_version" ]; then
    printf '  %-8s %-26s %s\n' ngtcp2 "$ngtcp2_version" "$HERE/ngtcp2-peer.sh (gtlsclient, gtlsserver)"
fi
if command -v tshark >/dev/null; then
    printf '  %-8s %-26s %s\n' tshark "$(tshark --version 2>/dev/null | head -n 1 | awk '{ print $3 }')" "$(command -v tshark) (wire checks)"
fi
