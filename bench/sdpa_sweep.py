#!/usr/bin/env python3
"""PyTorch's scaled_dot_product_attention at whale-attention-sweep's shapes.

Causal, bf16 operands (or fp32 with --dtype fp32), forward and forward + backward, ms a call (CUDA
events around back-to-back calls after two untimed ones), with the peak
memory PyTorch allocated for the call beyond its inputs. The peer of
bench/AttentionSweep.cpp (docs/gpu.md):

    python3 bench/sdpa_sweep.py [--device cuda] [--dtype bf16|fp32]
                                [--shapes 8x12x1024x64,...]
"""
import argparse
import math

import torch
import torch.nn.functional as F

DEFAULT = "8x12x1024x64,1x12x4096x64,1x12x8192x64,1x8x4096x128"


def timed(fn, device, calls):
    for _ in range(2):
        fn()
    if device == "cuda":
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        start.record()
        for _ in range(calls):
            fn()
        end.record()
        torch.cuda.synchronize()
        return start.elapsed_time(end) / calls
    import time
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t0) * 1e3 / calls


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--shapes", default=DEFAULT)
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--dtype", default="bf16", choices=["bf16", "fp32"])
    a = ap.parse_args()
    dtype = torch.bfloat16 if a.dtype == "bf16" else torch.float32
    print(f"scaled_dot_product_attention on {a.device}, causal, {a.dtype}; torch {torch.__version__}")
    print(f"{'shape':22s} {'fwd ms':>10s} {'fwd+bwd ms':>12s} {'fwd TF/s':>10s} {'peak extra':>12s}")
    for text in a.shapes.split(","):
        b, h, t, e = (int(x) for x in text.split("x"))
        q, k, v = (torch.randn(b, h, t, e, device=a.device, dtype=dtype,
                               requires_grad=True) for _ in range(3))
        dout = torch.randn_like(q)
        fwd = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True)

        def both():
            out = fwd()
            out.backward(dout)

        if a.device == "cuda":
            torch.cuda.synchronize()
            base = torch.cuda.memory_allocated()
            torch.cuda.reset_peak_memory_stats()
        with torch.no_grad():
            f_ms = timed(fwd, a.device, a.calls)
        fb_ms = timed(both, a.device, a.calls)
        out = fwd()
        if not torch.isfinite(out).all():
            raise SystemExit(f"{text}: non-finite output")
        peak = (torch.cuda.max_memory_allocated() - base) / 2**20 if a.device == "cuda" else math.nan
        flops = 2.0 * b * h * t * t * e
        print(f"{text:22s} {f_ms:10.3f} {fb_ms:12.3f} {flops / f_ms / 1e9:10.1f} {peak:9.1f} MiB")


if __name__ == "__main__":
    main()
