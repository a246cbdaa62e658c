#!/usr/bin/env python3
"""A mixture of experts split over devices (expert parallelism) against
the same experts replicated (data parallelism), on examples/moe_gpt.whl.

Part 1 plans both with `whale plan --json` (nothing runs) at sizes larger
than this machine runs, on 8, 16 and 32 devices: bytes per device per
step, all-to-all (the shard groups' traffic) and all-reduce, and the
experts' parameters each device holds.

Part 2 trains a size that runs here under both plans and reads the
runtime's counters (`whale run` prints them) next to what `whale plan`
predicts for the same plan, and the step time (median of the steps after
the first few) as tokens per second: the median over --rounds rounds that
run the plans in turn, with the spread (slowest over fastest round). Every
plan trains to the one-device losses (ctest -L equivalence); this only
measures.

    python3 bench/moe_comm.py [--whale build/bin/whale] [--steps 20]
                              [--rounds 3]
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLE = os.path.join(ROOT, "examples", "moe_gpt.whl")


def variant(folder, name, replicated):
    with open(EXAMPLE) as f:
        text = f.read()
    if replicated:
        text = text.replace("    split {", "    replicate {")
    path = os.path.join(folder, name + ".whl")
    with open(path, "w") as f:
        f.write(text)
    return path


def defines(size):
    out = []
    for k, v in size.items():
        out += ["--define", "%s=%s" % (k, v)]
    return out


def planned(whale, path, devices, size):
    out = subprocess.run([whale, "plan", path, "--cluster", "cpu:%d" % devices,
                          "--json", *defines(size)], check=True,
                         capture_output=True, text=True).stdout
    plan = json.loads(out)
    shard = reduce_ = total = 0
    for s in plan["taskgraph_stages"]:
        c = s["comm_bytes_per_step"]
        shard = max(shard, c["all_to_all"])
        reduce_ = max(reduce_, c["all_reduce"])
        total = max(total, c["all_reduce"] + c["shard_groups"] + c["send"])
    params = max(s["memory_bytes"]["parameters"]
                 for s in plan["taskgraph_stages"])
    return shard, reduce_, total, params


def measured(whale, path, devices, size, steps):
    with tempfile.NamedTemporaryFile(suffix=".jsonl") as m:
        out = subprocess.run(
            [whale, "run", path, "--cluster", "cpu:%d" % devices, "--threads",
             str(devices), "--steps", str(steps), "--metrics", m.name,
             *defines(size)], check=True, capture_output=True, text=True).stdout
        times = [json.loads(line)["time_s"] for line in open(m.name)]
    most = int(re.search(r"at most (\d+) by one rank", out).group(1))
    a2a = re.search(r"all-to-all: at most (\d+) by one rank", out)
    steps_s = [b - a for a, b in zip(times, times[1:])][3:]
    return most, int(a2a.group(1)) if a2a else 0, statistics.median(steps_s)


def mib(b):
    return "%.2f MiB" % (b / 1048576.0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--whale", default=os.path.join(ROOT, "build/bin/whale"))
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        ep = variant(tmp, "experts_split", False)
        dp = variant(tmp, "experts_replicated", True)

        big = dict(D=1024, HEADS=16, T=256, EXPERTS=32, LAYERS=4, BATCH=64)
        print("Planned, %s, per device per step (whale plan):" %
              ", ".join("%s=%s" % kv for kv in big.items()))
        print("| devices | plan | all-to-all | all-reduce | parameters |")
        print("|---|---|---|---|---|")
        for n in (8, 16, 32):
            for name, path in (("experts split", ep),
                               ("experts replicated", dp)):
                shard, red, _, params = planned(args.whale, path, n, big)
                print("| %d | %s | %s | %s | %s |" % (
                    n, name, mib(shard), mib(red), mib(params)))

        small = dict(D=128, EXPERTS=8, T=64, BATCH=16)
        print("\nA size that runs here (%s), %d steps, one thread a device, "
              "%d rounds:" % (", ".join("%s=%s" % kv for kv in small.items()),
                              args.steps, args.rounds))
        print("| devices | plan | predicted B/step | measured B/step | "
              "all-to-all predicted | all-to-all measured | step ms | "
              "spread | tokens/s |")
        print("|---|---|---|---|---|---|---|---|---|")
        tokens = small["BATCH"] * small["T"]
        cases = [(n, name, path) for n in (2, 4)
                 for name, path in (("experts split", ep),
                                    ("experts replicated", dp))]
        runs = {case: [] for case in cases}
        for _ in range(args.rounds):
            for case in cases:
                n, _, path = case
                runs[case].append(measured(args.whale, path, n, small,
                                           args.steps))
        for case in cases:
            n, name, path = case
            a2a, _, total, _ = planned(args.whale, path, n, small)
            most, moved, _ = runs[case][0]
            steps = [r[2] for r in runs[case]]
            step = statistics.median(steps)
            print("| %d | %s | %d | %d | %d | %d | %.1f | %.2f | %.0f |" % (
                n, name, total, most, a2a, moved, step * 1e3,
                max(steps) / min(steps), tokens / step))


if __name__ == "__main__":
    main()
