#!/usr/bin/env python3
"""Prints the several-flows table from one or more results.jsonl files (flows.sh calls it at the
end; run it by hand to merge invocations): per scenario and queue, over the seeds, the median
settling time (seconds from the last flow's start until the rates stay within 20 % of each
other for 5 s; "never" counts as longer than any, and the column says in how many runs it
happened), the median Jain index over the last 30 s, the median and the worst of the sliding
5-s Jain medians, each flow's median share of the last 30 s, the median queue drops and packets
each sender declared lost, and the load average at the runs' starts.

    tools/cclab/flows-table.py [--scenarios a,b] RESULTS.jsonl...
"""
import json
import math
import statistics
import sys


def med(xs):
    xs = [x for x in xs if x is not None and not (isinstance(x, float) and math.isnan(x))]
    return statistics.median(xs) if xs else None


def fmt(v, d=3):
    return "n/a" if v is None else ("never" if v == math.inf else f"{v:.{d}f}")


def main(argv):
    order = None
    if len(argv) > 1 and argv[0] == "--scenarios":
        order, argv = argv[1].split(","), argv[2:]
    rows = []
    for path in argv:
        for line in open(path):
            if line.strip():
                r = json.loads(line)
                if "error" not in r:
                    rows.append(r)
    keys = []
    for r in rows:
        k = (r["scenario"], r["queue_bdp"], r.get("loss", 0))
        if k not in keys:
            keys.append(k)
    if order:
        keys.sort(key=lambda k: (order.index(k[0]) if k[0] in order else len(order), k[1], k[2]))
    print("| scenario | queue (BDP) | flows | settling (s) | Jain, last 30 s | Jain 5 s (median / min) "
          "| shares, last 30 s | Mbit/s, last 30 s | queue drops | lost per flow | load | runs |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for k in keys:
        rs = [r for r in rows if (r["scenario"], r["queue_bdp"], r.get("loss", 0)) == k]
        settles = [math.inf if r["settle_s"] is None else r["settle_s"] for r in rs]
        never = sum(1 for s in settles if s == math.inf)
        n = len(rs[0]["shares"])
        shares = " / ".join(fmt(med([r["shares"][i] for r in rs])) for i in range(n))
        lost = " / ".join(
            fmt(med([r["sender_lost"][i] for r in rs if i < len(r["sender_lost"])]), 0)
            for i in range(n))
        loads = [r["load_start"] for r in rs]
        name = k[0] + (f", loss {k[2] * 100:g} %" if k[2] else "")
        print(f"| {name} | {k[1]:g} | {rs[0]['flows']} | {fmt(med(settles), 1)}"
              f"{f' ({never} never)' if never else ''} | {fmt(med([r['jain_tail'] for r in rs]))} | "
              f"{fmt(med([r['jain5_median'] for r in rs]))} / "
              f"{fmt(min(r['jain5_min'] for r in rs))} | {shares} | "
              f"{fmt(med([r['tail_mbps'] for r in rs]), 2)} | {fmt(med([r['queue_drops'] for r in rs]), 0)} | "
              f"{lost} | {min(loads):g}-{max(loads):g} | {len(rs)} |")


if __name__ == "__main__":
    main(sys.argv[1:])
