#!/usr/bin/env python3
"""Pipeline bubbles: each stage's measured idle fraction against the
schedule's (p-1)/(m+p-1), and each stage's peak activation memory, for
GPipe and 1F1B.

Runs `whale run --trace` on examples/gpt.whl (2 stages, m micro-batches, one
thread per rank) and reads the Chrome trace: a stage's idle fraction is
1 - (its compute time) / (the wall time of the traced steps). The first
steps are dropped (warm-up). Peak activations come from `whale plan --json`
(the most intermediate bytes alive at once in the stage's program).

    python3 bench/pipeline_bubbles.py [--whale build/bin/whale] [--steps 12]
"""
import argparse
import json
import os
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def variant(schedule, m):
    text = open(os.path.join(ROOT, "examples", "gpt.whl")).read()
    text = text.replace('schedule = "1f1b"', f'schedule = "{schedule}"')
    text = text.replace("num_micro_batch = 4", f"num_micro_batch = {m}")
    f = tempfile.NamedTemporaryFile("w", suffix=".whl", delete=False)
    f.write(text)
    f.close()
    return f.name


def measure(whale, script, steps, skip):
    trace = tempfile.mktemp(suffix=".json")
    subprocess.run([whale, "run", script, "--cluster", "cpu:2", "--threads",
                    "2", "--steps", str(steps), "--trace", trace],
                   check=True, capture_output=True)
    events = [e for e in json.load(open(trace))["traceEvents"]
              if e.get("ph") == "X"]
    # Steps are separated by the driver: find the step boundaries as the
    # starts of the first stage's first op after a gap, and keep the tail.
    events.sort(key=lambda e: e["ts"])
    start = events[0]["ts"]
    end = max(e["ts"] + e["dur"] for e in events)
    cut = start + (end - start) * skip / steps
    kept = [e for e in events if e["ts"] >= cut]
    wall = end - cut
    busy = {}
    for e in kept:
        if e["tid"] % 2 == 0:  # compute tracks are even, communication odd
            busy[e["tid"] // 2] = busy.get(e["tid"] // 2, 0) + e["dur"]
    os.remove(trace)
    return {rank: 1 - b / wall for rank, b in sorted(busy.items())}


def peaks(whale, script):
    out = subprocess.run([whale, "plan", script, "--cluster", "cpu:2",
                          "--json"], check=True, capture_output=True,
                         text=True).stdout
    return [s["memory_bytes"]["peak_activations"]
            for s in json.loads(out)["taskgraph_stages"]]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--whale", default=os.path.join(ROOT, "build/bin/whale"))
    ap.add_argument("--steps", type=int, default=12)
    args = ap.parse_args()
    p = 2
    print("| schedule | m | (p-1)/(m+p-1) | idle stage 0 | idle stage 1 "
          "| peak activations stage 0 | stage 1 |")
    print("|---|---|---|---|---|---|---|")
    for m in (2, 4, 8):
        for schedule in ("gpipe", "1f1b"):
            script = variant(schedule, m)
            idle = measure(args.whale, script, args.steps, skip=2)
            peak = peaks(args.whale, script)
            os.remove(script)
            print(f"| {schedule} | {m} | {(p - 1) / (m + p - 1):.3f} | "
                  f"{idle[0]:.3f} | {idle[1]:.3f} | "
                  f"{peak[0] / 2**20:.2f} MiB | {peak[1] / 2**20:.2f} MiB |")


if __name__ == "__main__":
    main()
