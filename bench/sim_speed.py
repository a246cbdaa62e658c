#!/usr/bin/env python3
"""How the simulator's cost grows with the devices of a plan.

Plans examples/gpt_scaled.whl on DGX A100 clusters of 8 to 3,072 GPUs
(examples/clusters/), then Megatron-LM's own plan of the 1T model (512
micro-batches of one sample, examples/gpt_auto.whl), and reports, for
each, the whole command's wall time (planning included), the simulator's
own reading and replay times, the distinct events, the replayed steps and
ranks, and the prediction.

    python3 bench/sim_speed.py [--whale build/bin/whale]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCALED = os.path.join(ROOT, "examples", "gpt_scaled.whl")
AUTO = os.path.join(ROOT, "examples", "gpt_auto.whl")
SCALED_OPTIONS = ["--define", "AMP=bf16", "--config", "recompute=true"]

# devices, defines: GPT shapes after Megatron-LM's scaling study (sequence
# 2048, vocabulary 51200), bf16, tensor parallel 8 inside a node.
PLANS = [
    (8, SCALED, SCALED_OPTIONS,
     ["LAYERS=24", "D=2304", "HEADS=24", "TP=8", "STAGES=2", "MICRO=1",
      "BATCH=64"]),
    (64, SCALED, SCALED_OPTIONS,
     ["LAYERS=40", "D=6144", "HEADS=48", "TP=8", "STAGES=2", "MICRO=8",
      "BATCH=512"]),
    (512, SCALED, SCALED_OPTIONS,
     ["LAYERS=48", "D=8192", "HEADS=64", "TP=8", "STAGES=8", "MICRO=16",
      "BATCH=1024"]),
    (3072, SCALED, SCALED_OPTIONS,
     ["LAYERS=128", "D=25600", "HEADS=160", "TP=8", "STAGES=64",
      "MICRO=64", "BATCH=3072"]),
    # Megatron-LM's 1T run: t = 8, p = 64, d = 6, micro-batches of one
    # sample (512 a replica), every rank holding whole rows: 7 million
    # steps to read and replay.
    (3072, AUTO, ["--config", "split_rows=whole"],
     ["LAYERS=128", "D=25600", "HEADS=160", "TP=8", "PP=64", "BATCH=3072",
      "MICRO=512"]),
    # The same, interleaved over two chunks a stage: 88.4 GB on its first
    # stage, so timed on GPUs of unbounded memory.
    (3072, AUTO, ["--config", "split_rows=whole"],
     ["LAYERS=128", "D=25600", "HEADS=160", "TP=8", "PP=64", "BATCH=3072",
      "MICRO=512", "CHUNKS=2"], True),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--whale", default=os.path.join(ROOT, "build", "bin",
                                                    "whale"))
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for devices, script, options, defines, *lift in PLANS:
            # With activation recomputation every plan fits in 80 GB, but
            # one interleaved.
            cluster = json.load(open(os.path.join(
                ROOT, "examples", "clusters", f"a100x{devices}.json")))
            if lift:
                cluster["nodes"][0]["devices"][0]["memory"] = "1000000GiB"
            path = os.path.join(tmp, "cluster.json")
            json.dump(cluster, open(path, "w"))
            cmd = [args.whale, "sim", script, "--cluster", path, "--json"]
            cmd += options
            for d in defines:
                cmd += ["--define", d]
            t0 = time.time()
            out = subprocess.run(cmd, capture_output=True, text=True)
            wall = time.time() - t0
            if out.returncode != 0:
                print(out.stderr, file=sys.stderr)
                return 1
            r = json.loads(out.stdout)
            micro = [d for d in defines if d.startswith("MICRO=")][0]
            chunks = "interleaved 2, " if "CHUNKS=2" in defines else ""
            print(f"{devices:5d} devices, {chunks}{micro[6:]:>3s} micro-batches: command {wall:6.2f} s, read "
                  f"{r['extract_s']:.3f} s, replay {r['replay_s']:.4f} s, "
                  f"{r['distinct_events']:4d} events, "
                  f"{r['replayed_steps']:7d} steps by "
                  f"{r['replayed_ranks']:3d} ranks; predicted "
                  f"{r['iteration_s']:8.3f} s/iteration, "
                  f"{r['flops_per_device'] / 1e12:6.1f} TFLOP/s per GPU, "
                  f"bubble {r['idle_fraction'] * 100:4.1f}%", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
