# shellcheck shell=bash
# Sourced by tools/bench/run.sh: one line per run appended to the record of figures over time
# (tools/bench/history.tsv by default; its columns are described in tools/bench/README.md).
#
# Needs from run.sh: REPO, DIR, SIZE, RUNS, LOAD_START, and the results files of the run.

HISTORY_COLUMNS="date	commit	machine	kernel	load	size	runs	hq_mbps	hq_server_s_gib	hq_client_s_gib	h3_mbps	h3_server_s_gib	h3_client_s_gib	quinn_mbps	quinn_server_s_gib	quinn_client_s_gib	ceiling_mbps	ceiling_server_s_gib	ceiling_client_s_gib	ceiling_udp_mbps	ceiling_udp_server_s_gib	ceiling_udp_client_s_gib	hq/ceiling_goodput	hq/ceiling_server	hq/ceiling_client	hq/ceiling_udp_goodput	hq/ceiling_udp_server	hq/ceiling_udp_client	ref	ref_hq_mbps	ref_hq_server_s_gib	ref_hq_client_s_gib	hq/ref_goodput	hq/ref_server	hq/ref_client	handshakes_per_s	idle_heap_bytes	rps	note"

# Medians of variant $1 in results.tsv: goodput (Mbit/s), server CPU s/GiB, client CPU s/GiB;
# "- - -" when the variant did not run.
variant_medians() {
    [ -s "$DIR/results.tsv" ] || { echo "- - -"; return; }
    awk -F'\t' -v v="$1" -v size="$SIZE" '
function med(a, n,    i, j, t) {
    for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
$1 == v { n++; g[n] = $3; c[n] = $5; s[n] = $6 }
END {
    if (n == 0) { print "- - -"; exit }
    gib = size / 1073741824
    printf "%.1f %.3f %.3f\n", med(g, n), med(s, n) / gib, med(c, n) / gib
}' "$DIR/results.tsv"
}

# a/b of each of the three figures of two `variant_medians` lines; "- - -" if either is missing.
median_ratios() {
    awk -v a="$1" -v b="$2" 'BEGIN {
    split(a, x, " "); split(b, y, " ")
    if (x[1] == "-" || y[1] == "-") { print "- - -"; exit }
    for (i = 1; i <= 3; i++) printf "%s%.3f", (i > 1 ? " " : ""), (y[i] > 0 ? x[i] / y[i] : 0)
    print ""
}'
}

# The commit the figures are of: HEAD, with -dirty when tracked files differ from it.
history_commit() {
    local c
    c="$(git -C "$REPO" rev-parse --short=12 HEAD 2>/dev/null)" || { echo "-"; return; }
    if [ -n "$(git -C "$REPO" status --porcelain --untracked-files=no 2>/dev/null)" ]; then
        c="$c-dirty"
    fi
    echo "$c"
}

history_machine() {
    local model
    model="$(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null)"
    echo "${model:-unknown CPU} x $(nproc)"
}

# Appends this run's line to file $1 (its header first if the file is new). $2: the reference
# commit of --compare ("-" without), $3: handshakes/s of ours, $4: idle heap per connection,
# $5: requests/s of ours, $6: a note ("-" for none).
history_append() {
    local file="$1" ref="$2" hs="$3" heap="$4" rps="$5" note="$6"
    local hq h3 quinn ceil ceil_udp refm
    hq="$(variant_medians ours-hq)"
    h3="$(variant_medians ours-h3)"
    quinn="$(variant_medians quinn)"
    ceil="$(variant_medians ceiling)"
    ceil_udp="$(variant_medians ceiling-udp)"
    refm="$(variant_medians ref-hq)"
    mkdir -p "$(dirname "$file")"
    [ -s "$file" ] || printf '%s\n' "$HISTORY_COLUMNS" >"$file"
    {
        printf '%s\t%s\t%s\t%s\t%s\t%s\t%s' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$(history_commit)" \
            "$(history_machine)" "$(uname -r)" "$LOAD_START" "$SIZE" "$RUNS"
        for f in $hq $h3 $quinn $ceil $ceil_udp $(median_ratios "$hq" "$ceil") \
            $(median_ratios "$hq" "$ceil_udp"); do
            printf '\t%s' "$f"
        done
        printf '\t%s' "$ref"
        for f in $refm $(median_ratios "$hq" "$refm"); do printf '\t%s' "$f"; done
        printf '\t%s\t%s\t%s\t%s\n' "${hs:--}" "${heap:--}" "${rps:--}" "${note:--}"
    } >>"$file"
    echo "history: one line appended to $file"
}
