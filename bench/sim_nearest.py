#!/usr/bin/env python3
"""How well one model's profile prices another model's events.

`whale profile` keeps each compute event's cost (a product's shape);
`whale sim --profile` prices an event the database has not timed from the
timed one of its family nearest in size (sim/ProfileDb.h). This profiles
a small GPT (examples/gpt_scaled.whl) at a base width, then predicts wider
ones three ways: from their own profile (every event measured), from the
base width's profile (events from the nearest timed one of their family,
the device model where it has none), and from the device model alone. It
prints the products' predicted time (matmuls, their gradients,
attention) and the iteration.
Every width is profiled once per round, the rounds interleaved, and each
prediction reads all its rounds' databases (an event takes their median):
this machine's speed moves by 20% between processes, which one profile
against another would carry into the comparison.

    python3 bench/sim_nearest.py [--base 128] [--widths 256 512]
                                 [--rounds 3] [--cluster cpu:1@threads=1]
"""
import argparse
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sim_accuracy import ROOT, SCALED as SCRIPT, whale  # noqa
# The products, with those GEMM epilogues fuse (whale.linear and its
# gradients, on plans with a GPU).
PRODUCTS = ("whale.matmul", "whale.matmul_grad", "whale.linear",
            "whale.linear_weight_grad", "whale.gelu_matmul_grad",
            "whale.attention", "whale.attention_grad")


def flags(width, cluster):
    defines = ["T=64", "VOCAB=256", "LAYERS=2", "BATCH=8", "TP=1", "MICRO=1",
               f"D={width}", f"HEADS={max(4, width // 64)}"]
    out = [SCRIPT, "--cluster", cluster]
    for d in defines:
        out += ["--define", d]
    return out


def simulate(binary, width, cluster, dbs):
    args = ["sim"] + flags(width, cluster) + ["--json"]
    for db in dbs:
        args += ["--profile", db]
    r = json.loads(whale(binary, args))
    products = sum(s for k, s in r["seconds_by_kind"].items()
                   if k in PRODUCTS)
    return products, r["iteration_s"], r.get("profiled_events")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--whale", default=os.path.join(ROOT, "build", "bin",
                                                    "whale"))
    ap.add_argument("--cluster", default="cpu:1@threads=1")
    ap.add_argument("--base", type=int, default=128)
    ap.add_argument("--widths", type=int, nargs="+", default=[256, 512])
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        dbs = {w: [] for w in [args.base] + args.widths}
        for r in range(args.rounds):
            for width in dbs:
                db = os.path.join(tmp, f"d{width}-{r}.json")
                whale(args.whale, ["profile"] + flags(width, args.cluster) +
                      ["-o", db])
                dbs[width].append(db)
        base = dbs[args.base]
        print(f"profiles of width {args.base} on {args.cluster}, "
              f"{args.rounds} rounds; products (matmuls, gradients, "
              "attention) and iteration, ms")
        print(f"{'width':>5} {'own profile':>23} {'width ' + str(args.base) + ' profile':>32}"
              f" {'device model':>30}")
        for width in args.widths:
            own = simulate(args.whale, width, args.cluster, dbs[width])
            near = simulate(args.whale, width, args.cluster, base)
            model = simulate(args.whale, width, args.cluster, [])

            def cell(r):
                return (f"{r[0] * 1e3:9.2f} ({(r[0] - own[0]) / own[0] * 100:+5.1f}%) "
                        f"{r[1] * 1e3:9.2f} ({(r[1] - own[1]) / own[1] * 100:+5.1f}%)")
            print(f"{width:5d} {own[0] * 1e3:11.2f} {own[1] * 1e3:11.2f} "
                  f"{cell(near)} {cell(model)}  from the nearest: "
                  f"{near[2]['nearest']} of {sum(near[2].values())}",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
