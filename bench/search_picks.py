#!/usr/bin/env python3
"""Does `whale search` pick the plan that is measured fastest?

For each model: `whale search` lists the plans it can simulate on the
cluster; `whale profile` times the events of each of them here; `whale
search --profile` (every database) ranks them; then `whale run` trains
each, and its iteration is the median step-to-step time after the first
steps (as bench/sim_accuracy.py measures). The plans are measured in
turn, round after round, and each keeps the median of its rounds: this
machine's speed drifts by 10-20% over minutes, and interleaving spreads
the drift over all plans alike. Reports predicted and measured for the
search's top 5, and where the measured fastest stands.

    python3 bench/search_picks.py [--steps 16] [--rounds 3]
                                  [--whale build/bin/whale]
"""
import argparse
import json
import os
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sim_accuracy import (ROOT, SCALED, SMALL, measured_iteration,  # noqa
                          script_flags, whale)

# name, script, cluster, defines: two devices of one thread each, what this
# 2-core machine holds without oversubscribing.
MODELS = [
    ("small GPT (4 blocks, width 128)", SCALED, "cpu:2@threads=1",
     SMALL + ["TP=2", "MICRO=1"]),
    ("hybrid classifier (replicate + split head)",
     os.path.join(ROOT, "examples", "classify_100k.whl"), "cpu:2@threads=1",
     ["INPUT=256", "FEATURES=256", "CLASSES=2048"]),
]


def config_flags(candidate):
    flags = []
    for key, value in candidate["config"].items():
        if isinstance(value, bool):
            value = "true" if value else "false"
        flags += ["--config", f"{key}={value}"]
    return flags


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--whale", default=os.path.join(ROOT, "build", "bin",
                                                    "whale"))
    ap.add_argument("--steps", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--only", help="the models whose name holds this")
    args = ap.parse_args()
    for name, script, cluster, defines in MODELS:
        if args.only and args.only not in name:
            continue
        base = script_flags(script, cluster, defines)
        with tempfile.TemporaryDirectory() as tmp:
            first = json.loads(whale(args.whale, ["search"] + base +
                                     ["--json", "--top", "1000"]))
            plans = first["top"]
            profiles = []
            for i, c in enumerate(plans):
                db = os.path.join(tmp, f"db{i}.json")
                whale(args.whale, ["profile"] + base + config_flags(c) +
                      ["-o", db])
                profiles += ["--profile", db]
            ranked = json.loads(whale(args.whale, ["search"] + base +
                                      profiles + ["--json", "--top", "1000"]))
            rounds = [[] for _ in ranked["top"]]
            for _ in range(args.rounds):
                for i, c in enumerate(ranked["top"]):
                    rounds[i].append(measured_iteration(
                        args.whale, base + config_flags(c), args.steps, tmp))
            rows = [(c["label"], c["iteration_s"], statistics.median(r))
                    for c, r in zip(ranked["top"], rounds)]
        fastest = min(r[2] for r in rows)
        print(f"\n{name} on {cluster}: {len(rows)} plans simulated of "
              f"{ranked['plans']}, search {ranked['search_s']:.2f} s")
        width = max(58, max(len(r[0]) for r in rows))
        print(f"{'rank':>4}  {'plan':{width}s} {'predicted':>10} {'measured':>10}"
              f" {'error':>7} {'vs fastest':>10}")
        for i, (label, predicted, measured) in enumerate(rows):
            if i >= 5 and measured != fastest:
                continue
            print(f"{i + 1:4d}  {label:{width}s} {predicted * 1e3:8.2f}ms "
                  f"{measured * 1e3:8.2f}ms "
                  f"{(predicted - measured) / measured * 100:+6.1f}% "
                  f"{(measured - fastest) / fastest * 100:+9.1f}%",
                  flush=True)
        best = rows[0][2]
        where = sorted(r[2] for r in rows).index(best) + 1
        print(f"the search's first is measured #{where} of {len(rows)}, "
              f"{(best - fastest) / fastest * 100:+.1f}% from the fastest")


if __name__ == "__main__":
    sys.exit(main())
