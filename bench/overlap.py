#!/usr/bin/env python3
"""Gradient all-reduces overlapped with backward, against after it.

    python3 bench/overlap.py [--rounds 5] [--steps 40] [--mpirun N] \
        -- SCRIPT.whl [whale run flags]

Each round runs `whale run SCRIPT ...` once as planned (all-reduces started
during backward) and once with --no-overlap, and prints the median step of
each and the last losses (which must agree). Then one traced run says how
much of the overlapped all-reduces the backward hid, per rank, from the
runtime's own events: the time the rank waited for them ("all_reduce
wait") against their whole time on its communication track ("overlapped
all_reduce"), the first 3 steps left out. With --mpirun N the ranks are
N MPI processes, each tracing into a file of its own.
"""
import glob
import collections
import json
import os
import statistics
import subprocess
import tempfile

from fuse_ab import ab_options, median_step_ms


def traced_ms_per_step(whale, args, steps, names, extra=(), launcher=()):
    """Per rank, the ms per step of the trace's events named `names` (the
    first 3 steps left out)."""
    total = collections.defaultdict(lambda: collections.defaultdict(float))
    with tempfile.TemporaryDirectory() as tmp:
        trace = os.path.join(tmp, "t.json")
        subprocess.run([*launcher, whale, "run", *args, "--steps", str(steps),
                        "--trace", trace, *extra], check=True,
                       capture_output=True)
        for process, path in enumerate(sorted(glob.glob(trace[:-5] + "*"))):
            spans = [e for e in json.load(open(path))["traceEvents"]
                     if e.get("ph") == "X"]
            steps_at = sorted(e["ts"] for e in spans
                              if e.get("cat") == "driver")
            skip_until = steps_at[3] if len(steps_at) > 3 else 0
            kept = max(1, len(steps_at) - 3)
            for e in spans:
                if e["ts"] >= skip_until and e["name"] in names:
                    total[(process, e["pid"])][e["name"]] += (
                        e["dur"] / 1000 / kept)
    return total


def main():
    a, args, whale = ab_options(5)
    ratios = []
    for r in range(a.rounds):
        over, lo = median_step_ms(whale, args, a.steps, launcher=a.launcher)
        after, la = median_step_ms(whale, args, a.steps,
                                   extra=["--no-overlap"], launcher=a.launcher)
        ratios.append(after / over)
        print(f"round {r + 1}: overlapped {over:.1f} ms, --no-overlap "
              f"{after:.1f} ms (x{after / over:.3f}); last loss {lo:.6f} / "
              f"{la:.6f}")
    print(f"median speed-up x{statistics.median(ratios):.3f}")
    over = traced_ms_per_step(whale, args, a.steps,
                              {"overlapped all_reduce", "all_reduce wait",
                               "all_reduce pack", "all_reduce unpack"},
                              launcher=a.launcher)
    after = traced_ms_per_step(whale, args, a.steps, {"all_reduce"},
                               extra=["--no-overlap"], launcher=a.launcher)
    for rank, pid in enumerate(sorted(over)):
        t = over[pid]
        summed, waited = t["overlapped all_reduce"], t["all_reduce wait"]
        share = 1 - waited / summed if summed else 0
        print(f"rank {rank}, per step: overlapped all_reduce {summed:.2f} ms, "
              f"waited {waited:.2f} ms ({100 * share:.1f}% hidden), packing "
              f"{t['all_reduce pack'] + t['all_reduce unpack']:.2f} ms; "
              f"with --no-overlap, all_reduce {after[pid]['all_reduce']:.2f} "
              f"ms")


if __name__ == "__main__":
    main()
