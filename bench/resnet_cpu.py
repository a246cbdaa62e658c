#!/usr/bin/env python3
"""Whale against PyTorch (eager, CPU) on one ResNet-50 training step.

The model is examples/resnet50_100k.whl at a size for this machine:
nn.resnet50 (ResNet-50 v1.5: 53 convolutions without biases, each
batch-normalized, the last normalization of each residual branch scaled
from zero, max pooling, global average pooling) and a linear head, SGD with
momentum 0.9 at lr 0.1, synthetic images. The same network in PyTorch
(torchvision's layout, written out here), the same batch, image size and
threads, one process each; the first steps are warmup and not timed.

    python3 bench/resnet_cpu.py [--size 64] [--batch 8] [--classes 1000]
                                [--steps 5] [--warmup 2] [--threads 2]
                                [--pairs 3]

Prints images per second of each and their ratio. Needs torch (pip).
"""
import argparse
import json
import os
import subprocess
import tempfile
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


def conv_bn(cin, out, kernel, stride=1, padding=0):
    return nn.Sequential(nn.Conv2d(cin, out, kernel, stride, padding,
                                   bias=False), nn.BatchNorm2d(out))


class Bottleneck(nn.Module):
    def __init__(self, cin, mid, stride):
        super().__init__()
        out = 4 * mid
        self.a = conv_bn(cin, mid, 1)
        self.b = conv_bn(mid, mid, 3, stride, 1)
        self.c = conv_bn(mid, out, 1)  # its scale starts at zero
        nn.init.zeros_(self.c[1].weight)
        self.proj = (conv_bn(cin, out, 1, stride)
                     if stride != 1 or cin != out else None)

    def forward(self, x):
        h = F.relu(self.b(F.relu(self.a(x))))
        return F.relu(self.c(h) + (self.proj(x) if self.proj else x))


class ResNet50(nn.Module):
    def __init__(self, classes):
        super().__init__()
        self.stem = conv_bn(3, 64, 7, 2, 3)
        blocks, cin = [], 64
        for mid, n, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2),
                               (512, 3, 2)):
            for i in range(n):
                blocks.append(Bottleneck(cin, mid, stride if i == 0 else 1))
                cin = 4 * mid
        self.blocks = nn.Sequential(*blocks)
        self.head = nn.Linear(2048, classes)

    def forward(self, x, y):
        h = F.max_pool2d(F.relu(self.stem(x)), 3, 2, 1)
        h = self.blocks(h).mean(dim=(2, 3))
        return F.cross_entropy(self.head(h), y)


def torch_images_per_second(a):
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    model = ResNet50(a.classes)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x = torch.rand(a.batch, 3, a.size, a.size) * 2 - 1
    y = torch.randint(0, a.classes, (a.batch,))
    for i in range(a.warmup + a.steps):
        if i == a.warmup:
            start = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        model(x, y).backward()
        opt.step()
    return a.steps * a.batch / (time.perf_counter() - start)


def whale_images_per_second(a, root):
    whale = os.path.join(root, "build", "bin", "whale")
    with tempfile.TemporaryDirectory() as tmp:
        metrics = os.path.join(tmp, "m.jsonl")
        subprocess.run([whale, "run",
                        os.path.join(root, "examples", "resnet50_100k.whl"),
                        "--define", f"SIZE={a.size}",
                        "--define", f"CLASSES={a.classes}",
                        "--define", f"BATCH={a.batch}",
                        "--steps", str(a.warmup + a.steps),
                        "--threads", str(a.threads), "--metrics", metrics],
                       check=True, capture_output=True)
        rows = [json.loads(l) for l in open(metrics)]
    timed = rows[a.warmup:]
    return len(timed) * a.batch / sum(a.batch / r["samples_per_s"]
                                      for r in timed)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=64)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--classes", type=int, default=1000)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--pairs", type=int, default=1,
                    help="runs of each, A B A B: the median ratio of the "
                         "pairs (a VM's speed drifts between runs)")
    a = ap.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    print(f"resnet-50 at {a.size}x{a.size}, batch {a.batch}, "
          f"{a.classes} classes, SGD momentum, {a.threads} threads, "
          f"{a.steps} timed steps after {a.warmup}")
    ratios = []
    for pair in range(a.pairs):
        w = whale_images_per_second(a, root)
        t = torch_images_per_second(a)
        if not (w == w and t == t):
            raise SystemExit("a rate is NaN")
        ratios.append(w / t)
        tag = f"pair {pair + 1}: " if a.pairs > 1 else ""
        print(f"{tag}whale   {w:8.2f} images/s")
        print(f"{tag}pytorch {t:8.2f} images/s  (torch {torch.__version__}, "
              f"eager)")
        print(f"{tag}whale / pytorch = {w / t:.3f}")
    if a.pairs > 1:
        ratios.sort()
        print(f"median whale / pytorch = {ratios[len(ratios) // 2]:.3f} "
              f"({a.pairs} pairs: " +
              ", ".join(f"{r:.3f}" for r in ratios) + ")")


if __name__ == "__main__":
    main()
