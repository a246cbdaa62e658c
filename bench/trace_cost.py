#!/usr/bin/env python3
"""What a profiling run's trace costs its steps, measured in one process.

A profile is taken from a traced run, and the simulator predicts an
untraced one: if tracing slows a step (or speeds it: a pause that lets
another thread run), the prediction carries that difference. Two separate
runs cannot tell tracing from the machine's drift between them (on a
noisy VM one process's steps run 20% slower than the next's). So each
plan's profiling run here traces only every other step (`whale-exec
--profile-trace --trace-every 2`, the accuracy bench's profiling run):
traced and untraced steps alternate in one process, on the same machine
state, and each traced step is compared with the untraced one after it.

For each plan, `--rounds` processes: per process the median over its pairs
(the first pair, the warm-up, left out) of traced / untraced; then the
median and spread of those over the processes. A plan whose tracing costs
nothing reads 1.000.

    python3 bench/trace_cost.py [--rounds 10] [--steps 24] [--only NAME]
                                [--skip NAME]

The same figure comes from any trace made with --trace-every 2 (the GPU
pack's profiling runs: bench/sim_accuracy.py --collect prints it).
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sim_accuracy import (PLANS, ROOT, flags_of, text_corpus,  # noqa
                          traced_over_untraced, whale)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--whale", default=os.path.join(ROOT, "build", "bin",
                                                    "whale"))
    ap.add_argument("--exec", default=os.path.join(ROOT, "build", "bin",
                                                   "whale-exec"))
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--steps", type=int, default=24)
    ap.add_argument("--only", help="the plans whose name holds this")
    ap.add_argument("--skip", help="not the plans whose name holds this")
    args = ap.parse_args()
    chosen = [p for p in PLANS if (not args.only or args.only in p[0]) and
              (not args.skip or args.skip not in p[0])]
    ratios = {p[0]: [] for p in chosen}
    with tempfile.TemporaryDirectory() as tmp:
        bundles = []
        for i, plan in enumerate(chosen):
            folder = os.path.join(tmp, f"plan-{i}")
            whale(args.whale, ["compile"] + flags_of(plan) +
                  ["--trace-sites", "--emit=bundle", "-o", folder])
            corpus = text_corpus(folder)
            bundles.append((folder, corpus))
        trace = os.path.join(tmp, "trace.json")
        # Round by round, so each plan's processes spread over the run.
        for round_ in range(args.rounds):
            for plan, (folder, corpus) in zip(chosen, bundles):
                run = [args.exec, folder, "--steps", str(args.steps),
                       "--profile-trace", trace, "--trace-every", "2"]
                if corpus:
                    run += ["--data", corpus]
                out = subprocess.run(run, capture_output=True, text=True)
                if out.returncode != 0:
                    raise RuntimeError(" ".join(run) + "\n" + out.stderr)
                r = traced_over_untraced(trace)
                ratios[plan[0]].append(r)
                print(f"round {round_ + 1}: {plan[0]:34s} traced / "
                      f"untraced {r:.3f}", flush=True)
    print("\n| plan | cluster | traced / untraced, median of processes "
          "| lowest | highest |")
    medians = []
    for name, _, cluster, *_ in chosen:
        rs = ratios[name]
        m = statistics.median(rs)
        medians.append(m)
        print(f"| {name} | {cluster} | {m:.3f} | {min(rs):.3f} | "
              f"{max(rs):.3f} |")
    off = sorted(abs(m - 1) for m in medians)
    print(f"\n{len(medians)} plans, {args.rounds} processes each: median "
          f"|traced / untraced - 1| {statistics.median(off) * 100:.1f}%, "
          f"worst {off[-1] * 100:.1f}%, "
          f"{sum(1 for o in off if o <= 0.01)} within 1%")


if __name__ == "__main__":
    sys.exit(main())
