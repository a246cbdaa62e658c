#!/usr/bin/env python3
"""Whale against PyTorch on one GPU: GPT-2 small's shape, the same run.

The model is nn.block's pre-norm transformer (as examples/gpt.whl) at GPT-2
small's shape by default: 12 layers, width 768, 12 heads, context 1024,
vocabulary 50,304 (--vocab 256 for the byte vocabulary), tanh GELU, AdamW
(lr 3e-4, weight decay 0.1), gradient clipping at 1.0. Both sides train the
same batch of token ids (bytes of a generated text, valid in either
vocabulary) in the same precision:

  fp32   (default) fp32 everywhere; TF32 off on both sides
  bf16   --amp: Whale's amp = "bf16" (matmuls in bf16, fp32 accumulation,
         fp32 weights and optimizer state); PyTorch autocast(bfloat16)
         --bf16-activations (implies --amp): Whale under amp's storage
         (whale run --bf16-activations: bf16 activations where a bf16
         kernel reads them, one bf16 copy of each weight a step)

PyTorch's model is written as its users write it (bench/torch_gpt.py: fused
QKV, scaled_dot_product_attention, AdamW(fused=True)) and runs eager and,
unless --no-compile, under torch.compile; the "same work" model of the
figures before 2026-11-29 (scores materialized, default AdamW) follows as a
labelled secondary row. Both sides are timed by wall clock over the same
timed steps after the same warmup. Prints tokens/s and model FLOP
utilization (6 N + 12 L T D FLOPs per token, N the parameters, against
--peak-tflops or the GPU's dense peak for the precision) for each, and
Whale's ratio to each peer; a non-finite loss on either side fails the run.

    python3 bench/gpt2_gpu.py [--batch 8] [--steps 10] [--warmup 3] [--amp]

On a machine without a GPU, --device cpu with a small shape checks the
script itself (Whale on cpu:1, PyTorch on the CPU):

    python3 bench/gpt2_gpu.py --device cpu --layers 2 --width 128 --heads 4 \\
        --seq 64 --vocab 256 --batch 4 --steps 3 --warmup 1 --no-compile

On a GPU machine without MLIR, Whale's side runs a plan compiled ahead of
time here (same shape flags on both sides; no torch needed to compile):

    python3 bench/gpt2_gpu.py --emit-bundle DIR [--amp]          # here
    python3 bench/gpt2_gpu.py --whale-exec PATH --bundle DIR [--amp]  # there

scripts/gpu-pack.sh does the first for fp32 and bf16.
"""
import argparse
import os
import re
import random
import subprocess
import sys
import tempfile
import time


# Dense peaks (TFLOP/s) by GPU name fragment: (fp32 without tensor cores,
# bf16 tensor cores), from the vendors' data sheets (SXM parts).
PEAKS = {"H200": (67.0, 989.0), "H100": (67.0, 989.0), "A100": (19.5, 312.0)}


def whale_script(a, text_path):
    amp = '\nconfig { amp = "bf16" }\n' if a.amp else ""
    blocks = """  for i in range(L) {
    x = nn.block(x, H)
  }"""
    head = """  positions = param([T, D], init = normal(0.01))
  x = nn.embed(tokens, V, D) + positions"""
    tail = """  logits = nn.linear(nn.norm(x), V)
  loss = mean(cross_entropy(logits, targets))"""
    if a.plan == "dp2":
        # Every op replicated over both ranks, each with half the batch.
        body = f"  default replicate\n{head}\n{blocks}\n{tail}"
    elif a.plan == "pp2":
        # Two stages of L / 2 blocks each, 1F1B over the micro-batches.
        amp = ("\nconfig {\n" + ('  amp = "bf16"\n' if a.amp else "") +
               f"  num_micro_batch = {a.micro_batches}\n"
               '  schedule = "1f1b"\n}\n')
        half = blocks.replace("range(L)", "range(L / 2)")
        body = (f"  replicate {{\n{head}\n{half}\n  }}\n"
                f"  replicate {{\n{half}\n{tail}\n  }}")
    else:
        body = f"{head}\n{blocks}\n{tail}"
    return f"""import nn
{amp}
V = {a.vocab}
T = {a.seq}
D = {a.width}
H = {a.heads}
L = {a.layers}

model gpt(tokens: i32[B, T], targets: i32[B, T]) {{
{body}
  return loss
}}

train gpt {{
  data = text("{text_path}", seq = T, batch = {a.batch}, seed = 0)
  optimizer = adamw(lr = 3e-4, weight_decay = 0.1)
  clip_grad_norm = 1.0
  steps = {a.warmup + a.steps}
}}
"""


def cluster_of(a, device):
    """One context of the GPU, or two of it for the plans of two ranks."""
    one = "cuda:0" if device == "cuda" else "cpu:1"
    return one if a.plan == "one" else f"{one},{one}"


def shape_args(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--width", type=int, default=768)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--vocab", type=int, default=50304)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--amp", action="store_true")
    ap.add_argument("--bf16-activations", action="store_true",
                    help="Whale under amp's storage (implies --amp)")
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument("--no-torch", action="store_true",
                    help="Whale alone (no peers): for A/B runs of Whale")
    ap.add_argument("--no-fuse", action="store_true",
                    help="Whale without fused kernels (whale run --no-fuse)")
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--plan", default="one", choices=["one", "dp2", "pp2"],
                    help="Whale's plan: one context of the GPU (default), or "
                    "two ranks on it: data parallel (dp2) or a two-stage "
                    "pipeline (pp2), the same global batch")
    ap.add_argument("--micro-batches", type=int, default=4,
                    help="pp2's micro-batches a step")
    ap.add_argument("--peak-tflops", type=float, default=0)
    ap.add_argument("--emit-bundle", metavar="DIR",
                    help="compile Whale's side for cuda:0 into DIR and stop")
    ap.add_argument("--bundle", metavar="DIR",
                    help="run the plan compiled into DIR with --whale-exec")
    ap.add_argument("--no-graphs", action="store_true",
                    help="Whale's steps op by op, not replayed as a CUDA "
                         "graph (WHALE_CUDA_GRAPHS=0), for A/B runs")
    ap.add_argument("--whale-exec", metavar="PATH",
                    help="the runner of compiled plans (build/bin/whale-exec)")
    ap.add_argument("--whale-trace", metavar="FILE",
                    help="also write Whale's Chrome trace of the run to FILE")
    a = ap.parse_args(argv)
    a.amp = a.amp or a.bf16_activations
    return a


def write_text(a, path):
    """The token text both sides train on: bytes of generated words."""
    rng = random.Random(0)
    words = ["whale", "gpu", "tensor", "plan", "stage", "ring", "the", "of"]
    with open(path, "w") as f:
        need = (a.warmup + a.steps + 2) * a.batch * (a.seq + 1) * 2
        while f.tell() < need:
            f.write(" ".join(rng.choice(words) for _ in range(64)) + "\n")


def emit_bundle(a, root):
    whale = os.path.join(root, "build", "bin", "whale")
    with tempfile.TemporaryDirectory() as tmp:
        text = os.path.join(tmp, "text.txt")
        write_text(a, text)
        script = os.path.join(tmp, "gpt2.whl")
        with open(script, "w") as f:
            f.write(whale_script(a, text))
        cmd = [whale, "compile", script, "--emit=bundle", "--cluster",
               cluster_of(a, "cuda"),
               "-o", a.emit_bundle, "-I", os.path.join(root, "stdlib")]
        if a.bf16_activations:
            cmd.append("--bf16-activations")
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(f"whale failed ({' '.join(cmd)}):\n{done.stderr}")
        print(done.stdout, end="")


if __name__ == "__main__":
    _a = shape_args()
    if _a.emit_bundle:
        emit_bundle(_a, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        sys.exit(0)

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_gpt  # noqa: E402


def parameters(a):
    d, v, t, l = a.width, a.vocab, a.seq, a.layers
    block = 4 * (d * d + d) + (d * 4 * d + 4 * d) + (4 * d * d + d) + 4 * d
    return v * d + t * d + l * block + 2 * d + d * v + v


def flops_per_token(a):
    return 6 * parameters(a) + 12 * a.layers * a.seq * a.width


def report_peak_memory(a, stdout):
    """Whale's measured peak (its allocator's, as `whale run --cluster`
    prints it) and what of it is not parameters, their gradients and
    AdamW's two moments (16 bytes a parameter, fp32): the activations, plus
    what else a step holds (amp's bf16 weight copies, cuBLASLt's
    workspace, the cached blocks the allocator has not handed back)."""
    m = re.search(r"peak memory per device: (\d+) bytes", stdout)
    if not m:
        return
    peak = int(m.group(1))
    state = 16 * parameters(a)
    print(f"  whale peak memory: {peak / 2**30:.2f} GiB, of which "
          f"{(peak - state) / 2**30:.2f} GiB beyond the parameters, "
          f"gradients and optimizer state ({state / 2**30:.2f} GiB)",
          flush=True)


def whale_run(a, root, device):
    whale = os.path.join(root, "build", "bin", "whale")
    with tempfile.TemporaryDirectory() as tmp:
        text = os.path.join(tmp, "text.txt")
        write_text(a, text)
        metrics = os.path.join(tmp, "m.jsonl")
        if a.bundle:
            cmd = [a.whale_exec or os.path.join(root, "build", "bin", "whale-exec"),
                   a.bundle, "--data", text, "--metrics", metrics,
                   "--steps", str(a.warmup + a.steps)]
        else:
            script = os.path.join(tmp, "gpt2.whl")
            with open(script, "w") as f:
                f.write(whale_script(a, text))
            cmd = [whale, "run", script, "--cluster", cluster_of(a, device),
                   "--metrics", metrics, "-I", os.path.join(root, "stdlib")]
            if a.no_fuse:
                cmd.append("--no-fuse")
            if a.bf16_activations:
                cmd.append("--bf16-activations")
        env = dict(os.environ)
        if a.no_graphs:
            env["WHALE_CUDA_GRAPHS"] = "0"
        done = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if done.returncode != 0:
            sys.exit(f"whale failed ({' '.join(cmd)}):\n{done.stderr}")
        for line in done.stderr.splitlines():  # notes, not progress
            if line.startswith("whale:"):
                print(line)
        report_peak_memory(a, done.stdout)
        # Whether the steps were replayed as one CUDA graph, and its size.
        for line in done.stdout.splitlines():
            if "CUDA graph" in line:
                print(f"  whale {line}", flush=True)
        tps = torch_gpt.whale_wall_tokens_per_second(metrics, a.warmup,
                                                     a.batch, a.seq)
        if a.whale_trace:
            # A run of its own: a traced step checks every op's output, so
            # it is not the timed one.
            traced = cmd + ["--steps", "3", "--trace", a.whale_trace]
            if subprocess.run(traced, capture_output=True).returncode != 0:
                print(f"the traced run failed: {' '.join(traced)}")
    return tps


def main():
    a = shape_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False

    name = torch.cuda.get_device_name(0) if a.device == "cuda" else "cpu"
    peak = a.peak_tflops
    for key, (fp32, bf16) in PEAKS.items():
        if not peak and key in name:
            peak = bf16 if a.amp else fp32
    fpt = flops_per_token(a)
    results = []

    def measured(label, tps):
        # Printed at once: a run cut short still says what it measured.
        results.append((label, tps))
        print(f"  measured {label}: {tps:.0f} tokens/s", flush=True)

    notes = []

    def peer(style, compiled=False):
        return torch_gpt.tokens_per_second(a, style, compiled, a.device, a.amp,
                                           a.steps, a.warmup, notes)

    measured("whale", whale_run(a, root, a.device))
    if not a.no_torch:
        measured("pytorch eager", peer("users"))
    if not a.no_compile and not a.no_torch:
        try:
            measured("torch.compile", peer("users", compiled=True))
        except Exception as e:  # report, do not hide, a compile failure
            print(f"torch.compile failed: {type(e).__name__}: {e}")
    secondary = None
    if not a.no_torch:
        secondary = peer("same-work")
    print(f"gpt {a.layers}x{a.width}, {a.heads} heads, context {a.seq}, "
          f"vocab {a.vocab}, batch {a.batch}, {'bf16 amp' if a.amp else 'fp32'}, "
          f"whale's plan {a.plan}"
          f"{f' ({a.micro_batches} micro-batches)' if a.plan == 'pp2' else ''}, "
          f"AdamW + clipping, {a.steps} timed steps after {a.warmup}, wall "
          f"clock; {parameters(a) / 1e6:.1f}M parameters; {name}; "
          f"torch {torch.__version__}")
    for note in sorted(set(notes)):
        print(f"note: {note}")

    def mfu(tps):
        return f"  MFU {100 * tps * fpt / (peak * 1e12):5.1f}%" if peak else ""

    for label, tps in results:
        print(f"{label:14s} {tps:12.0f} tokens/s{mfu(tps)}")
    for label, tps in results[1:]:
        print(f"whale / {label} = {results[0][1] / tps:.3f}")
    if secondary:
        print(f"secondary: pytorch eager, same work (scores materialized, "
              f"default AdamW) {secondary:.0f} tokens/s{mfu(secondary)}; "
              f"whale / it = {results[0][1] / secondary:.3f}")

if __name__ == "__main__":
    main()
