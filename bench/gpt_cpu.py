#!/usr/bin/env python3
"""Whale against PyTorch on the CPU, on the same GPT, in the same run.

The model is examples/gpt.whl: byte vocabulary (256), context 64, width 128,
4 heads, 4 pre-norm blocks (MLP 4x, tanh GELU), AdamW (lr 3e-4, weight decay
0.1), gradient clipping at 1.0, global batch 16. PyTorch's side is written
as its users write it (bench/torch_gpt.py: fused QKV,
scaled_dot_product_attention, fused AdamW), eager and with --compile under
torch.compile; the "same work" model of the figures before 2026-11-29
follows as a labelled secondary row. Both sides run in one process with the
same thread count and are timed by wall clock over the same timed steps,
after the warmup steps.

    python3 bench/gpt_cpu.py [--steps 20] [--warmup 5] [--threads 2] [--compile]
                             [--unfused]

Prints tokens per second of each and Whale's ratio to each. Needs torch (pip).
"""
import argparse
import os
import sys
from types import SimpleNamespace

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_gpt  # noqa: E402

SHAPE = SimpleNamespace(vocab=256, seq=64, width=128, heads=4, layers=4, batch=16)


def whale_tokens_per_second(steps, warmup, threads, root, fuse=True):
    return torch_gpt.whale_run_tokens_per_second(
        root, "gpt.whl", steps, warmup, threads, SHAPE.batch, SHAPE.seq,
        [] if fuse else ["--no-fuse"])


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
    torch.set_num_threads(args.threads)
    notes = []

    def peer(style, compiled=False):
        return torch_gpt.tokens_per_second(SHAPE, style, compiled, "cpu", False,
                                           args.steps, args.warmup, notes)

    w = whale_tokens_per_second(args.steps, args.warmup, args.threads, root)
    rows = [("pytorch eager", peer("users"))]
    if args.compile:
        rows.append(("torch.compile", peer("users", compiled=True)))
    same = peer("same-work")
    print(f"gpt {SHAPE.layers}x{SHAPE.width}, {SHAPE.heads} heads, context "
          f"{SHAPE.seq}, batch {SHAPE.batch}, AdamW + clipping, {args.threads} "
          f"threads, {args.steps} timed steps after {args.warmup}, wall clock; "
          f"torch {torch.__version__}")
    for note in sorted(set(notes)):
        print(f"note: {note}")
    print(f"whale          {w:10.0f} tokens/s")
    for label, t in rows:
        print(f"{label:14s} {t:10.0f} tokens/s  (fused QKV, SDPA, fused AdamW)")
    for label, t in rows:
        print(f"whale / {label} = {w / t:.3f}")
    if args.unfused:
        u = whale_tokens_per_second(args.steps, args.warmup, args.threads, root,
                                    fuse=False)
        print(f"whale --no-fuse {u:9.0f} tokens/s;  / pytorch eager = "
              f"{u / rows[0][1]:.3f}")
    print(f"secondary: pytorch eager, same work (scores materialized, default "
          f"AdamW) {same:.0f} tokens/s;  whale / it = {w / same:.3f}")


if __name__ == "__main__":
    main()
