#!/usr/bin/env python3
"""What each example's step waits for its data, beside the step itself.

A data source must never be a step's bottleneck (issue 92 item 19). Runs
each example for a few steps with `whale run --metrics` and reads, per
step, `data_s` (the wait for the batch: a synthetic(...) batch is made
while the previous step runs, so the wait is a copy) and the step's
length (the difference of consecutive `time_s`), and prints the medians
after the first step (which makes its batch, and the teacher, in line).

    python3 bench/data_time.py [--whale build/bin/whale] [--only NAME]

Each line: example, data source, median step seconds, median data wait,
the wait's share of the step, and the first step's wait.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# (name, script, steps, extra arguments): every example that trains on
# this machine as it is, the two 100,000-class ones at their own classes
# (resnet50_100k on small images and a small batch: its convolutions,
# not its data, would take minutes a step at 224 x 224 x 256).
EXAMPLES = [
    ("mlp", "examples/mlp.whl", 30, []),
    ("cnn", "examples/cnn.whl", 8, []),
    ("gpt", "examples/gpt.whl", 8, []),
    ("llama", "examples/llama.whl", 6, []),
    ("moe_gpt", "examples/moe_gpt.whl", 6, []),
    ("classify_100k", "examples/classify_100k.whl", 4, []),
    ("resnet50_100k", "examples/resnet50_100k.whl", 3,
     ["--define", "SIZE=64", "--define", "BATCH=16"]),
]


def kind_of(script):
    text = open(os.path.join(ROOT, script)).read()
    for kind in ("synthetic", "text", "tokens", "arrays"):
        if kind + "(" in text:
            return kind
    return "?"


def run(whale, script, steps, extra):
    with tempfile.TemporaryDirectory() as tmp:
        metrics = os.path.join(tmp, "m.jsonl")
        cmd = [whale, "run", os.path.join(ROOT, script), "--steps", str(steps),
               "--metrics", metrics] + extra
        done = subprocess.run(cmd, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True, cwd=ROOT)
        if done.returncode != 0:
            sys.exit(f"{script}: whale run failed:\n{done.stderr}")
        rows = [json.loads(line) for line in open(metrics)]
    for r in rows:
        for key in ("loss", "time_s", "data_s"):
            if r[key] != r[key]:  # NaN
                sys.exit(f"{script}: step {r['step']} has a NaN {key}")
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--whale", default=os.path.join(ROOT, "build/bin/whale"))
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    print(f"{'example':<15} {'data':<10} {'step s':>9} {'wait s':>9} "
          f"{'share':>7} {'first wait s':>13}")
    for name, script, steps, extra in EXAMPLES:
        if args.only and name != args.only:
            continue
        rows = run(args.whale, script, steps, extra)
        lengths = [b["time_s"] - a["time_s"] for a, b in zip(rows, rows[1:])]
        waits = [r["data_s"] for r in rows[1:]]
        step = statistics.median(lengths)
        wait = statistics.median(waits)
        print(f"{name:<15} {kind_of(script):<10} {step:>9.4f} {wait:>9.5f} "
              f"{wait / step:>6.1%} {rows[0]['data_s']:>13.4f}", flush=True)


if __name__ == "__main__":
    main()
