#!/usr/bin/env bash
# One worker against two: `quiche-server --threads 1` and `--threads 2` under the same
# `quiche-load`, in alternating runs (1, 2, 1, 2, ...), with an ECDSA P-256 certificate (the
# repository's test one) and an RSA-2048 one (generated here with openssl, as most Web PKI
# servers use), then the aggregate throughput of many downloads. Prints one line per run and
# a table: handshakes/s (median), the CPU each process used (server per thread), the CPU per
# handshake on each side, and the ratio of two workers to one.
#
# Usage: tools/load/scale.sh   (builds the release binaries first; about 1 to 3 minutes)
# Settings (environment): ROUNDS=3 (runs per worker count and certificate), HS_N=3000
# (connections per handshake run), MAX_PENDING=512, CERTS="ecdsa rsa", TP_N=20 (connections
# of the throughput runs), TP_MB=10 (MB each downloads), TP_ROUNDS=2.
#
# Every run has the same client settings: one request per connection, --no-hold (each
# connection closes once answered), at most MAX_PENDING handshakes in flight, no Retry, and
# the client does not check the certificate chain (it still checks the handshake signature,
# as every TLS client does). The load generator shares the machine with the server: on two
# cores, two workers can only beat one by what the generator leaves them (see the "bound"
# column: what the measured CPU per handshake allows on two cores).
set -euo pipefail
# shellcheck source=SCRIPTDIR/../lib.sh
. "$(dirname "$0")/../lib.sh"
cd "$REPO"
rounds=${ROUNDS:-3}
hs_n=${HS_N:-3000}
max_pending=${MAX_PENDING:-512}
certs=${CERTS:-ecdsa rsa}
tp_n=${TP_N:-20}
tp_mb=${TP_MB:-10}
tp_rounds=${TP_ROUNDS:-2}

if [[ " $certs " == *" rsa "* ]] && ! command -v openssl > /dev/null; then
    echo "no openssl to make the RSA certificate: ECDSA only" >&2
    certs=${certs//rsa/}
fi

build_apps quiche-load
bin="$TARGET/release"
tck=$(getconf CLK_TCK)
# Server and generator each run in a session of their own: where the kernel groups CPU time
# by session (autogroup), they then compete with other work as separate services would,
# instead of sharing this script's slice.
detach=()
if command -v setsid > /dev/null; then detach=(setsid); fi

dir=$(mktemp -d)
server_pid=
cleanup_dir "$dir"
mkdir "$dir/root"
printf 'hello from the scale run\n' > "$dir/root/index.html"
head -c $((tp_mb * 1000000)) /dev/zero > "$dir/root/big"

cert_files() {
    case $1 in
        ecdsa) echo "quiche/tests/certs/cert.crt quiche/tests/certs/cert.key" ;;
        rsa)
            if [ ! -f "$dir/rsa.crt" ]; then
                openssl req -x509 -newkey rsa:2048 -nodes -keyout "$dir/rsa.key" \
                    -out "$dir/rsa.crt" -days 2 -subj /CN=localhost \
                    -addext subjectAltName=DNS:localhost 2> /dev/null
            fi
            echo "$dir/rsa.crt $dir/rsa.key"
            ;;
    esac
}

# Starts the server with $1 workers and certificate type $2; sets server_pid and addr.
start_workers() {
    local c k
    read -r c k <<< "$(cert_files "$2")"
    RUST_LOG=warn start_server "$dir/server.log" ${detach[@]+"${detach[@]}"} "$bin/quiche-server" \
        --listen 127.0.0.1:0 --cert "$c" --key "$k" --root "$dir/root" \
        --idle-timeout 300000 --no-retry --threads "$1"
    server_pid=$SERVER_PID
    addr=$SERVER_ADDR
}

# CPU seconds (user+system) of the server's worker threads, as "total t1 t2 ...".
server_cpu() {
    local total=0 per="" t ticks
    for t in /proc/"$server_pid"/task/*; do
        ticks=$(awk '{print $14 + $15}' "$t/stat")
        # The main thread only waits for the workers (with --threads 2 or more).
        [ "$ticks" -eq 0 ] && continue
        total=$((total + ticks))
        per="$per $(awk -v x="$ticks" -v h="$tck" 'BEGIN{printf "%.2f", x / h}')"
    done
    awk -v x="$total" -v h="$tck" -v p="$per" 'BEGIN{printf "%.2f%s", x / h, p}'
}


field() { tr ' ' '\n' <<< "$1" | sed -n "s/^$2=//p"; }

# One run; sets `line` to "kind cert workers value server_cpu load_cpu loadavg per_thread...".
run() {
    local kind=$1 cert=$2 workers=$3 out load_cpu cpu la value total per
    start_workers "$workers" "$cert"
    la=$(cut -d' ' -f1 /proc/loadavg)
    local args=(--server "$addr" -q --no-hold --max-pending "$max_pending" -k 1 --timeout 120)
    if [ "$kind" = hs ]; then
        args+=(-n "$hs_n")
    else
        args+=(-n "$tp_n" --path /big)
    fi
    # The shell's `time` gives the load generator's CPU (user and system).
    local TIMEFORMAT='%U %S'
    if ! { time "${detach[@]}" "$bin/quiche-load" "${args[@]}" > "$dir/load.out" 2> "$dir/load.err"; } \
        2> "$dir/load.time"; then
        echo "the load run failed: $(cat "$dir/load.out" "$dir/load.err")" >&2
        echo "server ($workers workers, $cert) at $addr: CPU $(server_cpu) s" >&2
        tail -20 "$dir/server.log" >&2
        exit 1
    fi
    out=$(cat "$dir/load.out")
    cpu=$(server_cpu)
    stop_pid "$server_pid"
    load_cpu=$(awk '{printf "%.2f", $1 + $2}' "$dir/load.time")
    if [ "$kind" = hs ]; then value=$(field "$out" handshakes_per_s); else value=$(field "$out" goodput_mbit_s); fi
    read -r total per <<< "$cpu"
    line="$kind $cert $workers $value $total $load_cpu $la $per"
}

results=$dir/results
: > "$results"
printf '%-4s %-6s %-7s %10s %10s %9s %8s %s\n' run cert workers value srv_cpu_s load_cpu_s loadavg \
    srv_threads_s
# run_and_show KIND CERT WORKERS LABEL: one run, its line kept for the table and printed.
run_and_show() {
    run "$1" "$2" "$3"
    echo "$line" >> "$results"
    read -r _ c wk v sc lc la per <<< "$line"
    printf '%-4s %-6s %-7s %10s %10s %9s %8s %s\n' "$4" "$c" "$wk" "$v" "$sc" "$lc" "$la" "$per"
}
for cert in $certs; do
    for r in $(seq "$rounds"); do
        for w in 1 2; do run_and_show hs "$cert" "$w" "hs$r"; done
    done
done
for r in $(seq "$tp_rounds"); do
    for w in 1 2; do run_and_show tp ecdsa "$w" "tp$r"; done
done

echo
echo "Handshakes: $hs_n connections x 1 request per run, medians of $rounds runs; CPU per handshake"
echo "in microseconds; bound: handshakes/s the measured CPU allows on 2 cores (1 worker: the"
echo "slower of server and generator; 2 workers: both processes' CPU shared by 2 cores)."
echo "Throughput: $tp_n connections each downloading $tp_mb MB, medians of $tp_rounds runs, Mbit/s."
echo
awk -v n="$hs_n" -v tp_n="$tp_n" -v tp_mb="$tp_mb" -v order="$certs" '
function median(list,   a, k, i, j, t) {
    k = split(list, a, " ")
    for (i = 2; i <= k; i++) for (j = i; j > 1 && a[j-1] > a[j]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
    return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
}
{ key = $1 " " $2 " " $3; v[key] = v[key] " " $4; s[key] = s[key] " " $5; l[key] = l[key] " " $6 }
END {
    k = split(order, cs, " ")
    for (i = 1; i <= k; i++) keys[i] = "hs " cs[i]
    keys[k + 1] = "tp ecdsa"
    printf "| test | cert | workers | median | server CPU s | generator CPU s | server us/hs | generator us/hs | bound/s | 2 vs 1 |\n"
    printf "|---|---|---|---|---|---|---|---|---|---|\n"
    for (i = 1; i <= k + 1; i++) {
        kc = keys[i]
        if (!((kc " 1") in v)) continue
        split(kc, p, " ")
        for (w = 1; w <= 2; w++) {
            key = kc " " w
            m[w] = median(v[key]); sc[w] = median(s[key]); lc[w] = median(l[key])
        }
        ratio = m[1] > 0 ? m[2] / m[1] : 0
        for (w = 1; w <= 2; w++) {
            if (p[1] == "hs") {
                su = sc[w] / n * 1e6; cu = lc[w] / n * 1e6
                if (w == 1) { b = 1e6 / (su > cu ? su : cu) } else { b = 2e6 / (su + cu); if (b > 1e6 / cu) b = 1e6 / cu }
                printf "| handshakes/s | %s | %d | %.0f | %.2f | %.2f | %.0f | %.0f | %.0f | %s |\n", p[2], w, m[w], sc[w], lc[w], su, cu, b, w == 2 ? sprintf("%.2fx", ratio) : ""
            } else {
                printf "| Mbit/s (%d x %d MB) | %s | %d | %.0f | %.2f | %.2f | | | | %s |\n", tp_n, tp_mb, p[2], w, m[w], sc[w], lc[w], w == 2 ? sprintf("%.2fx", ratio) : ""
            }
        }
    }
}' "$results"
echo
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
