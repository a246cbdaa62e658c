#!/usr/bin/env python3
"""Balancing over devices of different speeds, measured.

Two CPU devices in one process with different thread counts (by default 4
and 2): their GEMM rates are measured with `whale devices --probe` and
written to a cluster file, then bench/hetero_mlp.whl trains (data parallel,
global batch 384) under

  - the balanced plan (local batches proportional to the measured rates),
  - the even plan (`--even`: 192 and 192),
  - each device alone on the whole batch (`cpu:1@threads=T`),

and the ideal is the sum of the two devices' rates alone. Samples/s are the
median over the steps after the first few (warm-up), from `--metrics`.

`--split` runs the same model as one `split` TaskGraph (tensor parallelism
over the two devices): the balanced plan then gives the pair uneven shards
(every split dimension and the rows cut by speed), the even plan halves.

The devices need their own cores: with fewer cores than threads the figures
measure the operating system's sharing, and the script says so.

    python3 bench/balance_hetero.py [--whale build/bin/whale] [--fast 4]
                                    [--slow 2] [--steps 20] [--split]
"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "bench", "hetero_mlp.whl")


def split_script():
    """hetero_mlp.whl with its body in one split TaskGraph."""
    text = open(SCRIPT).read()
    head, rest = text.split("{\n", 1)
    body, tail = rest.split("  return loss\n", 1)
    inner = "".join("  " + line + "\n" for line in body.splitlines())
    path = tempfile.mktemp(suffix=".whl")
    with open(path, "w") as f:
        f.write(head + "{\n  split {\n" + inner + "  }\n  return loss\n" +
                tail)
    return path


def samples_per_s(whale, cluster, steps, skip, extra=(), script=SCRIPT):
    metrics = tempfile.mktemp(suffix=".jsonl")
    out = subprocess.run([whale, "run", script, "--cluster", cluster,
                          "--steps", str(steps), "--metrics", metrics,
                          *extra], check=True, capture_output=True, text=True)
    rows = [json.loads(line) for line in open(metrics)]
    os.unlink(metrics)
    shares = [line for line in out.stdout.splitlines()
              if line.startswith("samples per device")]
    return (statistics.median(r["samples_per_s"] for r in rows[skip:]),
            shares[0].split(":")[1].strip() if shares else "")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--whale", default=os.path.join(ROOT, "build", "bin",
                                                    "whale"))
    ap.add_argument("--fast", type=int, default=4)
    ap.add_argument("--slow", type=int, default=2)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--split", action="store_true",
                    help="tensor parallelism: uneven shards vs equal ones")
    args = ap.parse_args()
    skip = min(3, args.steps // 4)
    cores = os.cpu_count() or 1
    if cores < args.fast + args.slow:
        print(f"note: {cores} cores for {args.fast} + {args.slow} threads: "
              "the devices share cores, so these figures measure the "
              "operating system's sharing, not two devices")

    cluster = tempfile.mktemp(suffix=".json")
    spec = f"cpu:1@threads={args.fast},cpu:1@threads={args.slow}"
    probe = subprocess.run([args.whale, "devices", "--cluster", spec,
                            "--probe", "-o", cluster], check=True,
                           capture_output=True, text=True)
    print(probe.stdout.rstrip())

    # Alone, a device runs the model as written (a split TaskGraph on one
    # device is the model itself).
    fast, _ = samples_per_s(args.whale, f"cpu:1@threads={args.fast}",
                            args.steps, skip)
    slow, _ = samples_per_s(args.whale, f"cpu:1@threads={args.slow}",
                            args.steps, skip)
    script = split_script() if args.split else SCRIPT
    try:
        balanced, shares_b = samples_per_s(args.whale, cluster, args.steps,
                                           skip, script=script)
        even, shares_e = samples_per_s(args.whale, cluster, args.steps, skip,
                                       ["--even"], script=script)
    finally:
        if args.split:
            os.unlink(script)
    ideal = fast + slow
    print(f"\n| plan | samples per device | samples/s | of ideal |")
    print(f"|---|---|---|---|")
    print(f"| {args.fast} threads alone | 384 | {fast:.0f} | |")
    print(f"| {args.slow} threads alone | 384 | {slow:.0f} | |")
    print(f"| even | {shares_e} | {even:.0f} | {even / ideal:.1%} |")
    print(f"| balanced | {shares_b} | {balanced:.0f} | {balanced / ideal:.1%} |")
    print(f"| ideal (sum alone) | | {ideal:.0f} | 100% |")
    print(f"\nbalanced / even: {balanced / even:.2f}x")
    os.unlink(cluster)


if __name__ == "__main__":
    main()
