"""The PyTorch peer of Whale's GPT benchmarks (bench/gpt_cpu.py, bench/gpt2_gpu.py).

nn.block's pre-norm transformer (examples/gpt.whl): learned positions, L
blocks of causal attention and a 4x MLP with tanh GELU, a final layernorm
and an untied head with bias; AdamW (lr 3e-4, weight decay 0.1) and
gradient clipping at 1.0. The same parameters in the same shapes as
Whale's model, written two ways:

  users      as PyTorch users write it: one fused QKV projection,
             F.scaled_dot_product_attention(is_causal=True) (flash or
             memory-efficient kernels, never the scores), AdamW(fused=True).
             This is the peer Whale is measured against.
  same-work  attention as Whale computed it before its fused kernels (scores
             materialized, masked, softmaxed) and PyTorch's default AdamW:
             the baseline of the figures before 2026-11-29, kept as a
             labelled secondary row only.

Timing is wall clock over the timed steps, after the warmup steps (where
torch.compile compiles), with the device synchronized at both ends; Whale's
side is timed the same way from its metrics' wall clock (whale_wall_tokens_per_second).
"""
import json
import math
import os
import subprocess
import tempfile
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

STYLES = ("users", "same-work")


class Block(nn.Module):
    def __init__(self, d, h, style):
        super().__init__()
        self.h, self.style = h, style
        self.n1, self.n2 = nn.LayerNorm(d), nn.LayerNorm(d)
        if style == "users":
            self.qkv = nn.Linear(d, 3 * d)
        else:
            self.q, self.k, self.v = (nn.Linear(d, d) for _ in range(3))
        self.o = nn.Linear(d, d)
        self.up, self.down = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def attention(self, x):
        b, t, d = x.shape
        heads = lambda y: y.view(b, t, self.h, d // self.h).transpose(1, 2)
        if self.style == "users":
            q, k, v = (heads(y) for y in self.qkv(x).split(d, dim=-1))
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            q, k, v = heads(self.q(x)), heads(self.k(x)), heads(self.v(x))
            s = (q @ k.transpose(-2, -1)) / math.sqrt(d // self.h)
            mask = torch.triu(torch.ones(t, t, dtype=torch.bool, device=x.device), 1)
            a = s.masked_fill(mask, float("-inf")).softmax(-1) @ v
        return a.transpose(1, 2).reshape(b, t, d)

    def forward(self, x):
        x = x + self.o(self.attention(self.n1(x)))
        return x + self.down(F.gelu(self.up(self.n2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, vocab, seq, width, heads, layers, style):
        super().__init__()
        self.vocab = vocab
        self.embed = nn.Embedding(vocab, width)
        self.pos = nn.Parameter(torch.randn(seq, width) * 0.01)
        self.blocks = nn.ModuleList(Block(width, heads, style) for _ in range(layers))
        self.norm, self.head = nn.LayerNorm(width), nn.Linear(width, vocab)

    def forward(self, tokens, targets):
        x = self.embed(tokens) + self.pos
        for b in self.blocks:
            x = b(x)
        logits = self.head(self.norm(x))
        return F.cross_entropy(logits.view(-1, self.vocab), targets.view(-1))


def optimizer(model, style, notes):
    """AdamW as each style's users run it; a fused AdamW this PyTorch lacks
    for the device is said, not hidden."""
    kw = dict(lr=3e-4, weight_decay=0.1)
    if style == "same-work":
        return torch.optim.AdamW(model.parameters(), **kw)
    try:
        return torch.optim.AdamW(model.parameters(), fused=True, **kw)
    except (RuntimeError, TypeError) as e:
        notes.append(f"AdamW(fused=True) unavailable here ({e}); foreach instead")
        return torch.optim.AdamW(model.parameters(), foreach=True, **kw)


def tokens_per_second(shape, style, compiled, device, amp, steps, warmup,
                      notes=None):
    """Trains `shape` (vocab, seq, width, heads, layers, batch) for warmup +
    steps steps; tokens/s by wall clock over the timed ones. Fails on a
    non-finite loss: a fast NaN is no result."""
    notes = [] if notes is None else notes
    torch.manual_seed(0)
    model = GPT(shape.vocab, shape.seq, shape.width, shape.heads, shape.layers,
                style).to(device)
    step_model = torch.compile(model) if compiled else model
    opt = optimizer(model, style, notes)
    tokens = torch.randint(0, min(256, shape.vocab), (shape.batch, shape.seq),
                           device=device)
    targets = torch.randint(0, min(256, shape.vocab), (shape.batch, shape.seq),
                            device=device)
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    for i in range(warmup + steps):
        if i == warmup:
            sync()
            start = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device, dtype=torch.bfloat16, enabled=amp):
            loss = step_model(tokens, targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
    sync()
    seconds = time.perf_counter() - start
    if not math.isfinite(loss.item()):
        raise RuntimeError(f"PyTorch ({style}) reached a non-finite loss")
    return steps * shape.batch * shape.seq / seconds


def whale_wall_tokens_per_second(metrics_path, warmup, batch, seq):
    """Whale's tokens/s by the wall clock of its metrics (time_s, seconds
    since the run began, written after each step) over the steps after
    `warmup`: the same measure as tokens_per_second's. Fails on a missing
    step or a non-finite loss."""
    rows = [json.loads(line) for line in open(metrics_path)]
    if len(rows) <= warmup or warmup < 1:
        raise RuntimeError(f"{metrics_path}: {len(rows)} steps logged, "
                           f"need more than {warmup} (and a warmup of 1 or more)")
    for r in rows:
        if not math.isfinite(r["loss"]):
            raise RuntimeError(f"Whale's loss at step {r['step']} is {r['loss']}")
    seconds = rows[-1]["time_s"] - rows[warmup - 1]["time_s"]
    return (len(rows) - warmup) * batch * seq / seconds


def whale_run_tokens_per_second(root, script, steps, warmup, threads, batch,
                                seq, extra=()):
    """Runs `whale run` of examples/`script` for warmup + steps steps and
    returns its tokens/s by whale_wall_tokens_per_second."""
    whale = os.path.join(root, "build", "bin", "whale")
    with tempfile.TemporaryDirectory() as tmp:
        metrics = os.path.join(tmp, "m.jsonl")
        subprocess.run([whale, "run", os.path.join(root, "examples", script),
                        "--steps", str(warmup + steps), "--threads", str(threads),
                        "--metrics", metrics] + list(extra),
                       check=True, capture_output=True)
        return whale_wall_tokens_per_second(metrics, warmup, batch, seq)
