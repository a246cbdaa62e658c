#!/usr/bin/env python3
"""Whale against transformers' LlamaForCausalLM on the CPU, on the same
Llama, in the same run.

The model is examples/llama.whl: byte vocabulary (256), context 64, width
128, 4 query and 2 key/value heads, SwiGLU 352, 4 blocks, untied head,
rope_theta 10000; AdamW (weight decay 0.1), gradient clipping at 1.0,
global batch 16. The peer is what Llama's users run: transformers'
LlamaForCausalLM of the same config (its SDPA attention, which takes the
grouped keys itself), AdamW(fused=True), eager and with --compile under
torch.compile. Both sides run in one process's turn with the same thread
count and are timed by wall clock over the same timed steps, after the
warmup steps; Whale's from its metrics (bench/torch_gpt.py's
whale_wall_tokens_per_second).

    python3 bench/llama_cpu.py [--steps 20] [--warmup 5] [--threads 2] [--compile]
                               [--width 256 --heads 8 --kv-heads 2 --hidden 704
                                --layers 4 --seq 256 --batch 8]

The shape flags (defaults: examples/llama.whl's) go to Whale as --define
and build the peer's config alike.

Prints tokens per second of each and Whale's ratio to each. Needs torch and
transformers (pip, in a venv outside the repository). Fails on a
non-finite loss on either side.
"""
import argparse
import math
import os
import sys
import time

import torch
import transformers

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_gpt  # noqa: E402

VOCAB = 256


def whale_tokens_per_second(shape, steps, warmup, threads, root):
    defines = []
    for name, value in [("D", shape.width), ("HEADS", shape.heads),
                        ("KV_HEADS", shape.kv_heads), ("HIDDEN", shape.hidden),
                        ("LAYERS", shape.layers), ("T", shape.seq),
                        ("BATCH", shape.batch)]:
        defines += ["--define", f"{name}={value}"]
    return torch_gpt.whale_run_tokens_per_second(
        root, "llama.whl", steps, warmup, threads, shape.batch, shape.seq,
        defines)


def peer_tokens_per_second(shape, compiled, steps, warmup, notes):
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=VOCAB, hidden_size=shape.width,
        intermediate_size=shape.hidden, num_hidden_layers=shape.layers,
        num_attention_heads=shape.heads, num_key_value_heads=shape.kv_heads,
        max_position_embeddings=shape.seq,
        rope_theta=10000.0, rms_norm_eps=1e-5, tie_word_embeddings=False,
        attn_implementation="sdpa")
    model = transformers.LlamaForCausalLM(config).float().train()
    step_model = torch.compile(model) if compiled else model
    kw = dict(lr=1e-3, weight_decay=0.1)
    try:
        opt = torch.optim.AdamW(model.parameters(), fused=True, **kw)
    except (RuntimeError, TypeError) as e:
        notes.append(f"AdamW(fused=True) unavailable here ({e}); foreach instead")
        opt = torch.optim.AdamW(model.parameters(), foreach=True, **kw)
    tokens = torch.randint(0, VOCAB, (shape.batch, shape.seq))
    targets = torch.randint(0, VOCAB, (shape.batch, shape.seq))
    for i in range(warmup + steps):
        if i == warmup:
            start = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        logits = step_model(input_ids=tokens).logits
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, VOCAB),
                                                 targets.reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
    seconds = time.perf_counter() - start
    if not math.isfinite(loss.item()):
        raise RuntimeError("transformers' Llama reached a non-finite loss")
    return steps * shape.batch * shape.seq / seconds


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--compile", action="store_true",
                    help="also time torch.compile's model")
    for flag, default in [("width", 128), ("heads", 4), ("kv-heads", 2),
                          ("hidden", 352), ("layers", 4), ("seq", 64),
                          ("batch", 16)]:
        ap.add_argument("--" + flag, type=int, default=default)
    args = ap.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    torch.set_num_threads(args.threads)
    notes = []
    w = whale_tokens_per_second(args, args.steps, args.warmup, args.threads,
                                root)
    rows = [("transformers", peer_tokens_per_second(args, False, args.steps,
                                                    args.warmup, notes))]
    if args.compile:
        rows.append(("torch.compile", peer_tokens_per_second(
            args, True, args.steps, args.warmup, notes)))
    print(f"llama {args.layers}x{args.width}, {args.heads} query and "
          f"{args.kv_heads} key heads, SwiGLU {args.hidden}, context "
          f"{args.seq}, batch {args.batch}, AdamW + clipping, "
          f"{args.threads} threads, {args.steps} timed steps after "
          f"{args.warmup}, wall clock; torch {torch.__version__}, "
          f"transformers {transformers.__version__}")
    for note in sorted(set(notes)):
        print(f"note: {note}")
    print(f"whale          {w:10.0f} tokens/s")
    for label, t in rows:
        print(f"{label:14s} {t:10.0f} tokens/s  (LlamaForCausalLM, SDPA, fused AdamW)")
    for label, t in rows:
        print(f"whale / {label} = {w / t:.3f}")


if __name__ == "__main__":
    main()
