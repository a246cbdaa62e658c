#!/usr/bin/env python3
"""Whale against PyTorch (eager, CPU) on the same GPT, in the same run.

The model is examples/gpt.whl: byte vocabulary (256), context 64, width 128,
4 heads, 4 pre-norm blocks (MLP 4x, tanh GELU), AdamW (lr 3e-4, weight decay
0.1), gradient clipping at 1.0, global batch 16. Both train on one process
with the same thread count; the first steps are warmup and not timed.

    python3 bench/gpt_cpu.py [--steps 20] [--warmup 5] [--threads 2] [--compile]
                             [--unfused]

Prints tokens per second of each and their ratio. Needs torch (pip).
"""
import argparse
import json
import math
import os
import subprocess
import tempfile
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

V, T, D, H, L, B = 256, 64, 128, 4, 4, 16


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.n1, self.n2 = nn.LayerNorm(D), nn.LayerNorm(D)
        self.q, self.k, self.v, self.o = (nn.Linear(D, D) for _ in range(4))
        self.up, self.down = nn.Linear(D, 4 * D), nn.Linear(4 * D, D)

    def forward(self, x):
        h = self.n1(x)
        split = lambda t: t.view(B, T, H, D // H).transpose(1, 2)
        q, k, v = split(self.q(h)), split(self.k(h)), split(self.v(h))
        s = (q @ k.transpose(-2, -1)) / math.sqrt(D // H)
        s = s.masked_fill(torch.triu(torch.ones(T, T, dtype=torch.bool), 1), float("-inf"))
        a = (s.softmax(-1) @ v).transpose(1, 2).reshape(B, T, D)
        x = x + self.o(a)
        return x + self.down(F.gelu(self.up(self.n2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(V, D)
        self.pos = nn.Parameter(torch.randn(T, D) * 0.01)
        self.blocks = nn.ModuleList(Block() for _ in range(L))
        self.norm, self.head = nn.LayerNorm(D), nn.Linear(D, V)

    def forward(self, tokens, targets):
        x = self.embed(tokens) + self.pos
        for b in self.blocks:
            x = b(x)
        logits = self.head(self.norm(x))
        return F.cross_entropy(logits.view(-1, V), targets.view(-1))


def torch_tokens_per_second(steps, warmup, threads, compiled=False):
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    model = GPT()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1)
    if compiled:
        # The forward and backward through TorchInductor's generated C++;
        # its compilation falls in the warmup steps.
        model = torch.compile(model)
    tokens = torch.randint(0, V, (B, T))
    targets = torch.randint(0, V, (B, T))
    for i in range(warmup + steps):
        if i == warmup:
            start = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = model(tokens, targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
    return steps * B * T / (time.perf_counter() - start)


def whale_tokens_per_second(steps, warmup, threads, root, fuse=True):
    whale = os.path.join(root, "build", "bin", "whale")
    with tempfile.TemporaryDirectory() as tmp:
        metrics = os.path.join(tmp, "m.jsonl")
        subprocess.run([whale, "run", os.path.join(root, "examples", "gpt.whl"),
                        "--steps", str(warmup + steps), "--threads", str(threads),
                        "--metrics", metrics] + ([] if fuse else ["--no-fuse"]),
                       check=True, capture_output=True)
        rows = [json.loads(l) for l in open(metrics)]
    timed = rows[warmup:]
    seconds = sum(B / r["samples_per_s"] for r in timed)
    return len(timed) * B * T / seconds


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--compile", action="store_true",
                    help="also time torch.compile's model")
    ap.add_argument("--unfused", action="store_true",
                    help="also time Whale without fused kernels (--no-fuse)")
    args = ap.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    w = whale_tokens_per_second(args.steps, args.warmup, args.threads, root)
    t = torch_tokens_per_second(args.steps, args.warmup, args.threads)
    print(f"gpt {L}x{D}, {H} heads, context {T}, batch {B}, AdamW + clipping, "
          f"{args.threads} threads, {args.steps} timed steps after {args.warmup}")
    print(f"whale   {w:10.0f} tokens/s")
    print(f"pytorch {t:10.0f} tokens/s  (torch {torch.__version__}, eager)")
    print(f"whale / pytorch = {w / t:.3f}")
    if args.unfused:
        u = whale_tokens_per_second(args.steps, args.warmup, args.threads, root,
                                    fuse=False)
        print(f"whale   {u:10.0f} tokens/s  (--no-fuse)")
        print(f"whale unfused / pytorch = {u / t:.3f}")
    if args.compile:
        c = torch_tokens_per_second(args.steps, args.warmup, args.threads,
                                    compiled=True)
        print(f"pytorch {c:10.0f} tokens/s  (torch.compile)")
        print(f"whale / torch.compile = {w / c:.3f}")


if __name__ == "__main__":
    main()
