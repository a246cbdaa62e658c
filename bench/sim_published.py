#!/usr/bin/env python3
"""Whale's predictions for the GPT runs Megatron-LM published.

Narayanan et al., "Efficient Large-Scale Language Model Training on GPU
Clusters Using Megatron-LM" (SC'21, arXiv:2104.04473), Table 1: GPT models
of 1.7B to 1T parameters on up to 3,072 A100-80GB GPUs of NVIDIA's Selene
(DGX A100 nodes: 8 GPUs on NVLink, 8 x 200 Gb/s InfiniBand per node),
sequence 2048, vocabulary 51,200, mixed precision, activation
recomputation. Each run is planned here as published (tensor parallel t,
pipeline p, data parallel n / (t p), global batch B) with
examples/gpt_auto.whl on a cluster file of n / 8 DGX A100 nodes, and
simulated from the data sheets in perfmodel/DeviceModel.cpp: nothing is fitted to
these measurements.

The published figure is teraFLOP/s per GPU by the paper's own count of a
step's FLOPs (its equation 3: 96 B s l h^2 (1 + s / 6h + V / 16 l h),
recomputation included), so its iteration time is that count / (figure x
n). Whale's prediction is compared as an iteration time and as the same
count over it.

Whale's micro-batch count is the fastest that fits in memory among those
its plan allows. With --rows whole (the default) a tensor-parallel group's
ranks share their rows (split_rows = "whole", Megatron-LM's layout), so a
micro-batch may hold one sample; with --rows part each rank of the group
takes rows of its own, so a micro-batch holds at least t samples per
replica. With --no-overlap every gradient all-reduce runs after the
backward, as Megatron-LM's data parallelism of 2021 ran it.

With --table 2 the bench checks the same paper's other runs the same way:
Table 2's PTD-P rows, the 174.6B GPT-3 (96 layers, 96 heads, hidden 12,288)
and the 529.6B model of Table 1, each at one global batch on two, four and
eight times the GPUs, so the micro-batches per pipeline shrink as the GPUs
grow. The table gives the model-parallel size (96 and 280) and a
micro-batch of one sample; t = 8 (a node, as in every pipelined run of
Table 1) and p = 96 / 8 = 12 for GPT-3 are read from it, and 280 = 8 x 35
is Table 1's layout of the 529.6B model. Whale runs each at that one
micro-batch count, B / d.

Table 1's runs used the interleaved pipeline schedule (Section 5.1); the
paper does not give each run's number of chunks a stage. By default Whale's
pipelines run plain 1F1B; with --chunks auto each pipeline also tries
virtual_stages = v for every v > 1 that divides its layers per stage (at
micro-batch counts that are multiples of p, as the schedule needs) and
keeps the fastest that fits; --chunks N tries N alone.

    python3 bench/sim_published.py [--whale build/bin/whale] [--rows whole|part]
                                   [--table 1|2] [--no-fuse] [--no-overlap]
                                   [--chunks 1|auto|N] [--json OUT]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "examples", "gpt_auto.whl")
VOCAB, SEQ = 51200, 2048

# billions of parameters, heads, hidden, layers, t, p, GPUs, batch,
# published teraFLOP/s per GPU (Table 1).
TABLE_1 = [
    (1.7, 24, 2304, 24, 1, 1, 32, 512, 137),
    (3.6, 32, 3072, 30, 2, 1, 64, 512, 138),
    (7.5, 32, 4096, 36, 4, 1, 128, 512, 142),
    (18.4, 48, 6144, 40, 8, 1, 256, 1024, 135),
    (39.1, 64, 8192, 48, 8, 2, 512, 1536, 138),
    (76.1, 80, 10240, 60, 8, 4, 1024, 1792, 140),
    (145.6, 96, 12288, 80, 8, 8, 1536, 2304, 148),
    (310.1, 128, 16384, 96, 8, 16, 1920, 2160, 155),
    (529.6, 128, 20480, 105, 8, 35, 2520, 2520, 163),
    (1008.0, 160, 25600, 128, 8, 64, 3072, 3072, 163),
]

# Table 2, PTD parallelism: the same fields; a micro-batch of one sample.
TABLE_2 = [
    (174.6, 96, 12288, 96, 8, 12, 384, 1536, 153),
    (174.6, 96, 12288, 96, 8, 12, 768, 1536, 149),
    (174.6, 96, 12288, 96, 8, 12, 1536, 1536, 141),
    (529.6, 128, 20480, 105, 8, 35, 560, 2240, 171),
    (529.6, 128, 20480, 105, 8, 35, 1120, 2240, 167),
    (529.6, 128, 20480, 105, 8, 35, 2240, 2240, 159),
]


def paper_flops(batch, layers, hidden):
    """Equation 3 of the paper: FLOPs of one iteration."""
    return (96 * batch * SEQ * layers * hidden ** 2 *
            (1 + SEQ / (6 * hidden) + VOCAB / (16 * layers * hidden)))


def selene(gpus, path, lift_memory=False):
    """A cluster file of gpus / 8 DGX A100 nodes (examples/clusters form);
    with lift_memory, GPUs of unbounded memory (for timing plans that do not
    fit)."""
    cluster = json.load(open(os.path.join(ROOT, "examples", "clusters",
                                          "a100x8.json")))
    cluster["nodes"][0]["count"] = gpus // 8
    if lift_memory:
        cluster["nodes"][0]["devices"][0]["memory"] = "1000000GiB"
    json.dump(cluster, open(path, "w"))


def simulate(whale, cluster, defines, rows, fuse=True, overlap=True):
    cmd = [whale, "sim", SCRIPT, "--cluster", cluster, "--json",
           "--config", f"split_rows={rows}"]
    if not fuse:
        cmd.append("--no-fuse")
    if not overlap:
        cmd.append("--no-overlap")
    for key, value in defines.items():
        cmd += ["--define", f"{key}={value}"]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        errors = [line for line in out.stderr.splitlines()
                  if "error:" in line]
        return None, (errors or [out.stderr.strip()])[0]
    return json.loads(out.stdout), None


def divisors(n):
    return [d for d in range(1, n + 1) if n % d == 0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--whale", default=os.path.join(ROOT, "build", "bin",
                                                    "whale"))
    ap.add_argument("--json", help="write every row here as JSON")
    ap.add_argument("--table", choices=["1", "2"], default="1",
                    help="the paper's Table 1 (weak scaling, the fastest "
                         "micro-batch count that fits) or Table 2's PTD-P "
                         "runs (one sample per micro-batch, as published)")
    ap.add_argument("--rows", choices=["whole", "part"], default="whole",
                    help="whether a tensor-parallel group shares its rows")
    ap.add_argument("--no-fuse", action="store_true",
                    help="every elementwise op its own kernel, as before "
                         "GPU plans fused their chains")
    ap.add_argument("--chunks", default="1",
                    help="model chunks a pipeline stage holds (the "
                         "interleaved schedule): 1, a number, or auto (each "
                         "that divides the layers per stage, the fastest)")
    ap.add_argument("--no-overlap", action="store_true",
                    help="every gradient all-reduce after the backward, as "
                         "Megatron-LM's data parallelism of 2021 ran it")
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for (billions, heads, hidden, layers, t, p, gpus, batch,
             published) in (TABLE_1 if args.table == "1" else TABLE_2):
            replicas = gpus // (t * p)

            if p == 1 or args.chunks == "1":
                chunk_counts = [1]
            elif args.chunks == "auto":
                chunk_counts = [1] + [v for v in divisors(layers // p)
                                      if v > 1]
            else:
                chunk_counts = [int(args.chunks)]

            def fastest(lift_memory):
                cluster = os.path.join(tmp, f"selene{gpus}.json")
                selene(gpus, cluster, lift_memory)
                best, refusal = None, None
                per_replica = batch // (
                    replicas if args.rows == "whole" else replicas * t)
                # Table 2 states its micro-batch: one sample, so B / d of
                # them (a group that shares its rows holds one sample).
                counts = (divisors(per_replica) if args.table == "1" else
                          [per_replica])
                for chunks in chunk_counts:
                    for micro in counts:
                        if p > 1 and micro < p:
                            continue  # fewer micro-batches than stages
                        if chunks > 1 and micro % p:
                            continue  # interleaving needs groups of p
                        r, err = simulate(args.whale, cluster, {
                            "LAYERS": layers, "D": hidden, "HEADS": heads,
                            "TP": t, "PP": p, "BATCH": batch,
                            "MICRO": micro, "CHUNKS": chunks},
                            args.rows, not args.no_fuse, not args.no_overlap)
                        if r is None:
                            refusal = err
                        elif (best is None or
                              r["iteration_s"] < best[2]["iteration_s"]):
                            best = (micro, chunks, r)
                return best, refusal

            flops = paper_flops(batch, layers, hidden)
            measured_s = flops / (published * 1e12 * gpus)
            best, refusal = fastest(False)
            lifted = best is None
            if lifted:
                # Refused by the memory check (the reason is reported): the
                # same plan timed on GPUs of unbounded memory.
                best, _ = fastest(True)
                if best is None:
                    print(f"{billions}B: refused even with memory lifted: "
                          f"{refusal}", file=sys.stderr)
                    return 1
            micro, chunks, r = best
            predicted_s = r["iteration_s"]
            kinds = r["seconds_by_kind"]
            total = sum(kinds.values())
            # GEMM-class work: the products (with their epilogues, as GPU
            # plans fuse them), and the fused attention whose tiles are
            # products (priced at the matrix rate).
            gemm = sum(v for k, v in kinds.items()
                       if k in ("whale.matmul", "whale.matmul_grad",
                                "whale.linear", "whale.linear_weight_grad",
                                "whale.gelu_matmul_grad",
                                "whale.attention", "whale.attention_grad"))
            row = {
                "billions": billions, "t": t, "p": p, "d": replicas,
                "rows": args.rows,
                "gpus": gpus, "batch": batch, "micro_batches": micro,
                "chunks": chunks,
                "published_tflops": published,
                "published_iteration_s": measured_s,
                "predicted_iteration_s": predicted_s,
                "predicted_tflops": flops / (predicted_s * gpus) / 1e12,
                "error": predicted_s / measured_s - 1,
                "bubble": r["idle_fraction"],
                "communication": r["comm_fraction"],
                "gemm_share_of_busy": gemm / total if total else 0.0,
                # What a run with free non-GEMM ops and no bubble would take:
                # the GEMMs' and the collectives' predicted time per GPU.
                "gemm_and_comm_s": (gemm / gpus +
                                    r["comm_fraction"] * predicted_s),
                "megatron_micro_batches": batch // replicas,
                "memory_lifted": lifted,
                "refusal": refusal if lifted else None,
            }
            rows.append(row)
            print(f"{billions:7.1f}B t={t} p={p:2d} d={replicas:3d} "
                  f"{gpus:5d} GPUs B={batch:5d} m={micro:3d} v={chunks}: "
                  f"published "
                  f"{published} TFLOP/s ({measured_s:7.2f} s), predicted "
                  f"{row['predicted_tflops']:6.1f} TFLOP/s "
                  f"({predicted_s:7.2f} s, {row['error'] * 100:+6.1f}%), "
                  f"bubble {row['bubble'] * 100:4.1f}%, communication "
                  f"{row['communication'] * 100:4.1f}%, GEMMs "
                  f"{row['gemm_share_of_busy'] * 100:4.1f}% of op time, "
                  f"GEMMs + communication {row['gemm_and_comm_s']:.2f} s"
                  + (f"; memory lifted, refused as planned: "
                     f"{refusal.split('error: ')[-1]}" if lifted else ""),
                  flush=True)
    if args.json:
        json.dump(rows, open(args.json, "w"), indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
