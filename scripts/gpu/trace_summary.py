#!/usr/bin/env python3
"""Where a traced Whale step's time goes, by op: the table docs/gpu.md and
docs/performance.md quote.

    python3 trace_summary.py TRACE.json [--top 20]

A traced run checks every op's output for NaN and infinity, which waits for
the device, so on a GPU an op's time is its launch plus the check that
follows it (the check's wait holds the kernel's run). Steps after the first
(set-up and first-use compilation) are averaged. Plain Python: it runs on
the GPU machine too.
"""
import argparse
import collections
import json


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("--top", type=int, default=20)
    a = ap.parse_args()
    t = json.load(open(a.trace))
    events = t["traceEvents"] if isinstance(t, dict) else t
    events = sorted((e for e in events if e.get("ph") == "X"),
                    key=lambda e: e["ts"])
    steps = [e for e in events if e.get("cat") == "driver"]
    if len(steps) < 2:
        raise SystemExit("trace_summary: fewer than two traced steps")
    start = steps[1]["ts"]
    per_op = collections.defaultdict(lambda: [0, 0.0])
    last = None
    for e in events:
        if e["ts"] < start or e.get("cat") == "driver":
            continue
        if e.get("cat") == "compute":
            last = e["name"][:48]
            per_op[last][0] += 1
            per_op[last][1] += e["dur"]
        elif e.get("cat") == "check" and last:
            per_op[last][1] += e["dur"]
    timed = len(steps) - 1
    total = sum(v[1] for v in per_op.values()) / timed / 1e3
    durations = ", ".join("%.1f" % (s["dur"] / 1e3) for s in steps[1:])
    print(f"traced steps after the first: {durations} ms; "
          f"ops and their checks {total:.1f} ms a step")
    print(f"{'op':48s} {'a step':>7s} {'ms a step':>10s} {'ms each':>8s}")
    for name, (n, us) in sorted(per_op.items(), key=lambda kv: -kv[1][1])[:a.top]:
        print(f"{name:48s} {n / timed:7.0f} {us / timed / 1e3:10.1f} "
              f"{us / n / 1e3:8.3f}")


if __name__ == "__main__":
    main()
