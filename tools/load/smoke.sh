#!/usr/bin/env bash
# A CI-sized load smoke: quiche-server (with its default Retry) and quiche-load on loopback,
# N connections (default 200) of K requests each; fails unless every connection and request
# succeeds. Usage: tools/load/smoke.sh [N] [K] (uses the debug binaries; PROFILE=release for
# the release ones, which it builds).
set -euo pipefail
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
cd "$REPO"
n=${1:-200}
k=${2:-2}
profile=${PROFILE:-debug}
build_packages "$profile" quiche-apps quiche-load

dir=$(mktemp -d)
cleanup_dir "$dir"
mkdir "$dir/root"
printf 'hello from the load smoke\n' > "$dir/root/index.html"
certs=quiche/tests/certs
start_server "$dir/server.log" "$TARGET/$profile/quiche-server" --listen 127.0.0.1:0 \
    --cert "$certs/cert.crt" --key "$certs/cert.key" --root "$dir/root" --idle-timeout 300000
timeout 300 "$TARGET/$profile/quiche-load" --server "$SERVER_ADDR" -n "$n" -k "$k" -q \
    --timeout 240 --server-pid "$SERVER_PID"
