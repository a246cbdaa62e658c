#!/usr/bin/env python3
"""Whale with and without its fused kernels, alternating, in one run.

    python3 bench/fuse_ab.py [--rounds 3] [--steps 40] [--mpirun N] \
        -- SCRIPT.whl [whale run flags]

Each round runs `whale run SCRIPT ... --metrics` once fused and once with
--no-fuse and prints the median step time of each (the first 3 steps left
out: compilation and first touches), and the final losses, which must agree.
"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile


def median_step_ms(whale, args, steps, fuse=True, extra=(), launcher=()):
    """The median step of `whale run` (the first 3 steps left out) and the
    last loss; `extra` flags are added to the run, which `launcher` (such
    as mpirun -np 2) starts."""
    with tempfile.TemporaryDirectory() as tmp:
        metrics = os.path.join(tmp, "m.jsonl")
        cmd = [*launcher, whale, "run", *args, "--steps", str(steps),
               "--metrics", metrics, *extra]
        if not fuse:
            cmd.append("--no-fuse")
        subprocess.run(cmd, check=True, capture_output=True)
        rows = [json.loads(l) for l in open(metrics)]
    times = [r["time_s"] for r in rows]
    steps_s = [b - a for a, b in zip(times, times[1:])][3:]
    return statistics.median(steps_s) * 1000, rows[-1]["loss"]


def ab_options(rounds):
    """The A/B scripts' command line: --rounds, --steps, then `--` and the
    script with whale run's flags. Returns (options, run's arguments, the
    whale binary)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=rounds)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--mpirun", type=int, default=0, metavar="N",
                    help="run the ranks as N MPI processes (mpirun -np N)")
    ap.add_argument("run", nargs=argparse.REMAINDER,
                    help="-- then the script and whale run's flags")
    a = ap.parse_args()
    args = [x for x in a.run if x != "--"]
    a.launcher = ["mpirun", "-np", str(a.mpirun)] if a.mpirun else []
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return a, args, os.path.join(root, "build", "bin", "whale")


def main():
    a, args, whale = ab_options(3)
    for r in range(a.rounds):
        fused, lf = median_step_ms(whale, args, a.steps, True)
        plain, lp = median_step_ms(whale, args, a.steps, False)
        print(f"round {r + 1}: fused {fused:.1f} ms, --no-fuse {plain:.1f} ms "
              f"(x{plain / fused:.3f}); last loss {lf:.6f} / {lp:.6f}")


if __name__ == "__main__":
    main()
