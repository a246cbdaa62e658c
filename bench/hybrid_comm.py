#!/usr/bin/env python3
"""Bytes communicated per step: pure data parallelism against the Whale
paper's hybrid (replicated feature extractor, split classifier).

Part 1 plans the paper's case with `whale plan --json` (nothing runs): a
ResNet-50-sized backbone (about 92 MB of parameters: a 3072 -> 2048 layer
and two residual MLP blocks of width 2048) and a 100,000-class fully
connected head (about 782 MiB), on 8, 16 and 32 devices, global batch 256.

Part 2 trains a size that runs on this machine for 2 steps under both
plans and reads the runtime's counters (`whale run` prints them), next to
what `whale plan` predicts for the same plan.

Part 3 does both for the real backbone: examples/resnet50_100k.whl
(nn.resnet50, convolutions and pooling, without batch normalization) at
224 x 224, planned on 8, 16 and 32 devices; and at 32 x 32 pixels with
20,000 classes, trained for 2 steps on 4 devices.

    python3 bench/hybrid_comm.py [--whale build/bin/whale]
"""
import argparse
import json
import os
import re
import subprocess
import tempfile

TEMPLATE = """import nn

model classify(images: f32[B, {inp}], labels: i32[B]) {{
  replicate {{
    h = relu(nn.linear(images, {width}))
    for i in range({blocks}) {{
      h = h + nn.mlp(nn.norm(h), {width})
    }}
  }}
  {head} {{
    logits = nn.linear(h, {classes})
    loss = mean(cross_entropy(logits, labels))
  }}
  return loss
}}

train classify {{
  data = synthetic(batch = {batch}, seed = 7)
  optimizer = sgd(lr = 0.1, momentum = 0.9)
  steps = 2
}}
"""


def script(folder, name, head, **size):
    path = os.path.join(folder, name + ".whl")
    with open(path, "w") as f:
        f.write(TEMPLATE.format(head=head, **size))
    return path


def planned(whale, path, devices, extra=()):
    out = subprocess.run([whale, "plan", path, "--cluster", "cpu:%d" % devices,
                          "--json", *extra], check=True, capture_output=True,
                         text=True).stdout
    plan = json.loads(out)
    per = 0
    for s in plan["taskgraph_stages"]:
        c = s["comm_bytes_per_step"]
        per = max(per, c["all_reduce"] + c["shard_groups"] + c["send"] +
                  c.get("statistics", 0))
    return per


def measured(whale, path, devices, extra=()):
    out = subprocess.run([whale, "run", path, "--cluster", "cpu:%d" % devices,
                          "--threads", str(devices), *extra], check=True,
                         capture_output=True, text=True).stdout
    m = re.search(r"at most (\d+) by one rank", out)
    return int(m.group(1))


def mib(b):
    return "%.1f MiB" % (b / 1048576.0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--whale", default="build/bin/whale")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        paper = dict(inp=3072, width=2048, blocks=2, classes=100000, batch=256)
        dp = script(tmp, "paper_dp", "replicate", **paper)
        hy = script(tmp, "paper_hybrid", "split", **paper)
        print("Paper case, per device per step (whale plan):")
        print("| devices | pure DP | hybrid | hybrid / DP |")
        print("|---|---|---|---|")
        for n in (8, 16, 32):
            a, b = planned(args.whale, dp, n), planned(args.whale, hy, n)
            print("| %d | %s | %s | %.3f |" % (n, mib(a), mib(b), b / a))
        small = dict(inp=256, width=256, blocks=2, classes=20000, batch=32)
        dp = script(tmp, "small_dp", "replicate", **small)
        hy = script(tmp, "small_hybrid", "split", **small)
        print("\nA size that runs (256-wide backbone, 20,000 classes, batch 32),")
        print("bytes per step of the busiest rank:")
        print("| devices | plan | predicted | measured |")
        print("|---|---|---|---|")
        for n in (4, 8):
            for name, path in (("pure DP", dp), ("hybrid", hy)):
                print("| %d | %s | %d | %d |" % (
                    n, name, planned(args.whale, path, n),
                    measured(args.whale, path, n)))
    resnet(args)


def resnet(args):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    example = os.path.join(root, "examples", "resnet50_100k.whl")
    with open(example) as f:
        text = f.read()
    with tempfile.TemporaryDirectory() as tmp:
        dp = os.path.join(tmp, "resnet_dp.whl")
        with open(dp, "w") as f:
            f.write(text.replace("  split {", "  replicate {"))
        print("\nResNet-50 (224 x 224, 100,000 classes, batch 256), per device "
              "per step (whale plan):")
        print("| devices | pure DP | hybrid | hybrid / DP |")
        print("|---|---|---|---|")
        for n in (8, 16, 32):
            a, b = planned(args.whale, dp, n), planned(args.whale, example, n)
            print("| %d | %s | %s | %.3f |" % (n, mib(a), mib(b), b / a))
        small = ["--define", "SIZE=32", "--define", "CLASSES=20000",
                 "--define", "BATCH=8", "--steps", "2"]
        print("\nResNet-50 at 32 x 32, 20,000 classes, batch 8, bytes per step "
              "of the busiest rank:")
        print("| devices | plan | predicted | measured |")
        print("|---|---|---|---|")
        for name, path in (("pure DP", dp), ("hybrid", example)):
            print("| 4 | %s | %d | %d |" % (
                name, planned(args.whale, path, 4, small[:6]),
                measured(args.whale, path, 4, small)))


if __name__ == "__main__":
    main()
