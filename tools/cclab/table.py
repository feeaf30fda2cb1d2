#!/usr/bin/env python3
"""Prints cclab's markdown table from one or more results.tsv files (run.sh calls it at the end;
run it by hand to merge runs of several invocations): per loss rate and sender, the median time,
queue drops, random drops, retransmitted and lost packets, and the sender's other counters.

    tools/cclab/table.py [--senders a,b,c] RESULTS.tsv...
"""
import statistics
import sys


def med(xs):
    xs = [float(x) for x in xs if x not in ("n/a", "nan", "fail", "")]
    return statistics.median(xs) if xs else None


def fmt(v, d=0):
    return "n/a" if v is None else f"{v:.{d}f}"


def main(argv):
    order = None
    if len(argv) > 1 and argv[0] == "--senders":
        order, argv = argv[1].split(","), argv[2:]
    rows = []
    for path in argv:
        rows += [l.rstrip("\n").split("\t") for l in open(path) if l.strip()]
    if order is None:
        order = []
        for r in rows:
            if r[0] not in order:
                order.append(r[0])
    losses = []
    for r in rows:
        if r[1] not in losses:
            losses.append(r[1])
    print("| loss | sender | median time (s) | min..max (s) | queue drops | random drops "
          "| retransmitted | lost | other (median) | runs |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for loss in losses:
        for s in order:
            rs = [r for r in rows if r[0] == s and r[1] == loss]
            if not rs:
                continue
            t = [float(r[3]) for r in rs if r[3] not in ("fail", "nan", "")]
            fails = len(rs) - len(t)
            kv = {}
            for r in rs:
                for part in (r[8] if len(r) > 8 else "").replace(",", " ").split():
                    if "=" in part:
                        k, v = part.split("=", 1)
                        kv.setdefault(k, []).append(v)
            other = " ".join(
                f"{k}={fmt(med(v), 3 if any('.' in x for x in v) else 0)}" for k, v in kv.items()
            )
            span = f"{fmt(min(t), 2)}..{fmt(max(t), 2)}" if t else "n/a"
            print(f"| {float(loss) * 100:g} % | {s} | {fmt(med(t) if t else None, 2)} | {span} | "
                  f"{fmt(med([r[4] for r in rs]))} | {fmt(med([r[5] for r in rs]))} | "
                  f"{fmt(med([r[6] for r in rs]))} | {fmt(med([r[7] for r in rs]))} | {other} | "
                  f"{len(t)}{f' ({fails} failed)' if fails else ''} |")


if __name__ == "__main__":
    main(sys.argv[1:])
