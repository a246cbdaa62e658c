#!/usr/bin/env python3
"""What the Python loop costs: steps per second of a small model trained
through `for step in whale.train(...)` against `whale run` on the same
script, seed and steps, A B A B in one process tree (docs/performance.md).

Both sides read their steps' times the same way: the seconds from the end
of step `--skip` to the end of the last step (the compile and the first
steps left out), `whale run` from its metrics file and Python from
perf_counter at each step it is handed (its own loop's cost included).

  PYTHONPATH=build/python python3 bench/python_overhead.py \
      [--script examples/mlp.whl] [--steps 400] [--pairs 3]
      [--define LAYERS=2]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import whale

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def cli_rate(binary, script, steps, skip, threads, defines):
    with tempfile.TemporaryDirectory() as tmp:
        metrics = os.path.join(tmp, "m.jsonl")
        subprocess.run([binary, "run", script, "--steps", str(steps),
                        "--seed", "1", "--metrics", metrics] +
                       [a for k, v in defines.items()
                        for a in ("--define", f"{k}={v}")] +
                       (["--threads", str(threads)] if threads else []),
                       check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        rows = [json.loads(l) for l in open(metrics)]
    losses = [r["loss"] for r in rows]
    return (steps - skip) / (rows[-1]["time_s"] - rows[skip - 1]["time_s"]), \
        losses


def python_rate(script, steps, skip, threads, defines):
    program = whale.compile(script, defines=defines)
    ends = []
    losses = []
    with tempfile.TemporaryDirectory() as tmp:
        # The metrics file too, as the whale run side writes it.
        for step in whale.train(program, steps=steps, seed=1, threads=threads,
                                metrics=os.path.join(tmp, "m.jsonl")):
            ends.append(time.perf_counter())
            losses.append(step.loss)
    return (steps - skip) / (ends[-1] - ends[skip - 1]), losses


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--script", default=os.path.join(root, "examples",
                                                     "mlp.whl"))
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--skip", type=int, default=20)
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--define", action="append", default=[],
                    help="NAME=VALUE, a constant of the script")
    ap.add_argument("--whale", default=os.path.join(root, "build", "bin",
                                                    "whale"))
    a = ap.parse_args()
    defines = dict(d.split("=", 1) for d in a.define)
    ratios = []
    for pair in range(a.pairs):
        cli, cli_losses = cli_rate(a.whale, a.script, a.steps, a.skip,
                                   a.threads, defines)
        py, py_losses = python_rate(a.script, a.steps, a.skip, a.threads,
                                    defines)
        if any(l != l for l in py_losses + cli_losses):
            sys.exit("a loss is NaN")
        if py_losses != cli_losses:
            sys.exit("the Python run's losses differ from whale run's")
        ratios.append(py / cli)
        print(f"pair {pair + 1}: whale run {cli:.1f} steps/s, "
              f"Python loop {py:.1f} steps/s, ratio {py / cli:.3f}")
    print(f"median ratio Python / whale run: {statistics.median(ratios):.3f}"
          f" ({a.pairs} pairs, {a.steps} steps, first {a.skip} left out)")


if __name__ == "__main__":
    main()
