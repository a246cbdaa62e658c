#!/usr/bin/env python3
"""Balancing over devices of different speeds, measured.

Two CPU devices in one process with different thread counts (by default 4
and 2): their GEMM rates are measured with `whale devices --probe` and
written to a cluster file, then bench/hetero_mlp.whl trains (data parallel,
global batch 384) under

  - the balanced plan (local batches proportional to the measured rates),
  - the even plan (`--even`: 192 and 192),
  - each device alone on the whole batch (`cpu:1@threads=T`),

and the ideal is the sum of the two devices' rates alone. Samples/s are
the steps' samples over their time after the first few (warm-up), from
`--metrics`: the harmonic mean of the steps' rates, not their median, for
a device under a share runs in the kernel's 100 ms periods, which cut its
steps unevenly (half a core at a global batch of 3,072: steps of 0.53 and
0.58-0.60 s, the median 1.9% below the rate).

`--split` runs the same model as one `split` TaskGraph (tensor parallelism
over the two devices): the balanced plan then gives the pair uneven shards
(every split dimension and the rows cut by speed), the even plan halves.
`--pipeline LAYERS` pipelines a deeper model over the two devices instead
(`--micro` micro-batches a step; `--virtual V` chunks a stage,
interleaved).

The devices need their own cores: with fewer cores than threads the figures
measure the operating system's sharing, and the script says so.

`--shares 1.0,0.25` makes the devices unequal on alike cores instead: two
one-thread devices, each allowed that part of its core's time by the
kernel's CPU controller (cpu:1@share=S, issue 88; runtime/core/CpuShare.h),
probed under their shares.

    python3 bench/balance_hetero.py [--whale build/bin/whale] [--fast 4]
                                    [--slow 2] [--steps 20] [--split]
                                    [--shares A,B] [--batch N] [--rounds R]
                                    [--pipeline LAYERS [--micro M]
                                     [--virtual V]]

Unequal GPUs are shares of one GPU's SMs (`cuda:0@sms=K`, a green context
each; docs/balancing.md). A GPU machine has no MLIR, so the plans are
compiled here and run there by whale-exec (scripts/gpu-pack.sh packs them,
scripts/gpu/check.sh runs them with WHALE_GPU_BALANCE=1), and the table is
made here from what comes back:

    python3 bench/balance_hetero.py --emit-gpu-pack DIR [--sms 40,88]
    DIR/run.sh RESULTS                       # there
    python3 bench/balance_hetero.py --collect-gpu DIR RESULTS

The model is GPT at GPT-2 small's width (12 heads of 64, context 256, 4
blocks), large enough that a share's SMs, not launches, bound its step:
each share alone, then both at once as data parallelism and as one split
TaskGraph, each balanced by the shares' rates and even.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "bench", "hetero_mlp.whl")


def split_script():
    """hetero_mlp.whl with its body in one split TaskGraph."""
    text = open(SCRIPT).read()
    head, rest = text.split("{\n", 1)
    body, tail = rest.split("  return loss\n", 1)
    inner = "".join("  " + line + "\n" for line in body.splitlines())
    path = tempfile.mktemp(suffix=".whl")
    with open(path, "w") as f:
        f.write(head + "{\n  split {\n" + inner + "  }\n  return loss\n" +
                tail)
    return path


def deep_scripts(layers, micro=8, virtual=1):
    """hetero_mlp.whl's layer LAYERS times in a row at MICRO micro-batches:
    unmarked (each device alone), pipelined over the two devices as two
    TaskGraphs of equal halves (the even pipeline), and unmarked under
    auto_parallel, cut into two stages by the devices' probed rates (the
    balanced one). With VIRTUAL chunks a stage, both pipelines interleave
    (virtual_stages): 2 x VIRTUAL TaskGraphs, equal parts in the even one,
    cut by the rates in the balanced one."""
    def layer(indent):
        return f"{indent}h = relu(nn.linear(h, 1024))\n"
    graphs = 2 * virtual
    if layers % graphs:
        raise SystemExit(f"--pipeline {layers}: the even pipeline's "
                         f"{graphs} TaskGraphs need a multiple of {graphs}")
    micro_line = f"  num_micro_batch = {micro}\n"
    virtual_line = (f"  virtual_stages = {virtual}\n" if virtual > 1
                    else "")
    head = ("import nn\nBATCH = 384\n"
            "model deep(x: f32[B, 512], y: i32[B]) {\n  h = x\n")
    tail = ("  loss = mean(cross_entropy(nn.linear(h, 10), y))\n"
            "  return loss\n}\n\n"
            "train deep {\n  data = synthetic(batch = BATCH, seed = 1)\n"
            "  optimizer = sgd(lr = 0.01)\n  steps = 20\n}\n")
    part = layers // graphs
    blocks = ""
    for g in range(graphs):
        last = g == graphs - 1
        blocks += ("  replicate {\n" + layer("    ") * part
                   + ("    " + tail.split("\n", 1)[0].strip() + "\n"
                      if last else "")
                   + "  }\n")
    even = (head.replace("BATCH = 384\n",
                         "BATCH = 384\nconfig {\n" + micro_line
                         + virtual_line + "}\n")
            + blocks + tail.split("\n", 1)[1])
    balanced = (head.replace("BATCH = 384\n",
                             "BATCH = 384\nconfig {\n" + micro_line
                             + "  auto_parallel = true\n"
                             + f"  num_task_graph = {graphs}\n"
                             + virtual_line + "}\n")
                + layer("  ") * layers + tail)
    # Alone, the model as one TaskGraph: one rank, one thread (two stages
    # on one device would be two ranks, two threads and two quotas).
    plain = (head.replace("BATCH = 384\n",
                          "BATCH = 384\nconfig {\n" + micro_line + "}\n")
             + layer("  ") * layers + tail)
    paths = []
    for text in (plain, even, balanced):
        path = tempfile.mktemp(suffix=".whl")
        open(path, "w").write(text)
        paths.append(path)
    return paths


def samples_per_s(whale, cluster, steps, skip, extra=(), script=SCRIPT,
                  batch=384):
    metrics = tempfile.mktemp(suffix=".jsonl")
    out = subprocess.run([whale, "run", script, "--cluster", cluster,
                          "--steps", str(steps), "--metrics", metrics,
                          "--define", f"BATCH={batch}", *extra], check=True,
                         capture_output=True, text=True)
    rows = [json.loads(line) for line in open(metrics)]
    os.unlink(metrics)
    shares = [line for line in out.stdout.splitlines()
              if line.startswith("samples per device")]
    values = [r["samples_per_s"] for r in rows[skip:]]
    if not values or any(not (v > 0) or v != v for v in values):
        raise SystemExit(f"{script} on {cluster}: no finite samples/s")
    return (statistics.harmonic_mean(values),
            shares[0].split(":")[1].strip() if shares else "")


def predicted_samples_per_s(whale, cluster, extra=(), script=SCRIPT,
                            batch=384):
    """What `whale sim` predicts for the plan `whale run` would make."""
    out = subprocess.run([whale, "sim", script, "--cluster", cluster,
                          "--json", "--define", f"BATCH={batch}", *extra],
                         check=True, capture_output=True, text=True)
    return json.loads(out.stdout)["samples_per_s"]


def one_device_cluster(cluster, i):
    """A cluster file of device i of `cluster` alone (its probed rate)."""
    c = json.load(open(cluster))
    c["nodes"] = [dict(c["nodes"][0],
                       devices=[c["nodes"][0]["devices"][i]])]
    path = tempfile.mktemp(suffix=".json")
    with open(path, "w") as f:
        json.dump(c, f)
    return path


GPT = os.path.join(ROOT, "examples", "gpt_scaled.whl")
GPT_SIZES = ["D=768", "HEADS=12", "T=256", "LAYERS=4", "VOCAB=8192",
             "BATCH=64", "STAGES=2", "MICRO=1"]


def gpu_plans(shares, model):
    """name, cluster, defines, compile flags: each share alone, then
    together as data parallelism and as a split TaskGraph, balanced and
    even."""
    one = [f"cuda:0@model={model},sms={k}" for k in shares]
    both = ",".join(one)
    plans = [(f"alone {k} SMs", c, ["TP=1"], []) for k, c in zip(shares, one)]
    for kind, tp in (("data parallel", "TP=1"), ("split TaskGraph", "TP=2")):
        for even in (False, True):
            plans.append((f"{kind}, {'even' if even else 'balanced'}", both,
                          [tp], ["--even"] if even else []))
    return plans


def emit_gpu_pack(args):
    """The GPU plans compiled into DIR, with DIR/run.sh to train each there
    (whale-exec) and write its metrics into RESULTS."""
    shares = [int(k) for k in args.sms.split(",")]
    plans = gpu_plans(shares, args.model)
    os.makedirs(args.emit_gpu_pack, exist_ok=True)
    lines = ["#!/usr/bin/env bash",
             "# Made by bench/balance_hetero.py --emit-gpu-pack: each plan",
             "# trained by whale-exec; bring RESULTS back to --collect-gpu.",
             "set -uo pipefail",
             'here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"',
             'out="${1:?usage: run.sh RESULTS}"',
             'mkdir -p "$out"',
             'exec_="${WHALE_EXEC:-whale-exec}"']
    for i, (name, cluster, defines, flags) in enumerate(plans):
        folder = os.path.join(args.emit_gpu_pack, f"plan-{i}")
        shutil.rmtree(folder, ignore_errors=True)
        cmd = [args.whale, "compile", GPT, "--emit=bundle", "--cluster",
               cluster, "-o", folder, *flags]
        for d in GPT_SIZES + defines + [f"AMP={args.amp}"]:
            cmd += ["--define", d]
        subprocess.run(cmd, check=True, capture_output=True, text=True)
        lines += [f'echo "{name}"',
                  f'"$exec_" "$here/plan-{i}" --steps {args.steps} '
                  f'--metrics "$out/metrics-{i}.jsonl" > "$out/log-{i}.txt" '
                  f'2>&1 || echo "  failed: $(tail -1 "$out/log-{i}.txt")"']
    json.dump({"plans": [p[0] for p in plans], "shares": shares,
               "model": args.model, "amp": args.amp, "steps": args.steps},
              open(os.path.join(args.emit_gpu_pack, "plans.json"), "w"),
              indent=1)
    script = os.path.join(args.emit_gpu_pack, "run.sh")
    open(script, "w").write("\n".join(lines) + "\n")
    os.chmod(script, 0o755)
    print(f"{len(plans)} plans in {args.emit_gpu_pack}; there: run.sh RESULTS")


def collect_gpu(args):
    """The table of what DIR/run.sh measured there: samples/s of each plan
    (the median over the steps after the first few), the gain of balanced
    over even, and each against the ideal (the shares' rates alone,
    summed)."""
    pack, results = args.collect_gpu
    meta = json.load(open(os.path.join(pack, "plans.json")))
    rate = {}
    for i, name in enumerate(meta["plans"]):
        path = os.path.join(results, f"metrics-{i}.jsonl")
        if not os.path.exists(path):
            print(f"{name}: no metrics (failed there?)")
            continue
        rows = [json.loads(line) for line in open(path)]
        values = [r["samples_per_s"] for r in rows[min(3, len(rows) // 4):]]
        if not values or any(v != v for v in values):
            raise SystemExit(f"{name}: no finite samples/s")
        rate[name] = statistics.median(values)
    alone = [rate.get(f"alone {k} SMs") for k in meta["shares"]]
    ideal = sum(alone) if all(alone) else None
    amp = "bf16 amp" if meta["amp"] == "bf16" else "fp32"
    print(f"GPT at GPT-2 small's width, {amp}, on shares of one "
          f"{meta['model']}: SMs {' + '.join(map(str, meta['shares']))}\n")
    print("| plan | samples/s | of ideal |")
    print("|---|---:|---:|")
    for name in meta["plans"]:
        if name in rate:
            of = f"{rate[name] / ideal:.1%}" if ideal else ""
            print(f"| {name} | {rate[name]:.1f} | {of} |")
    if ideal:
        print(f"| ideal (the shares alone, summed) | {ideal:.1f} | 100% |")
    for kind in ("data parallel", "split TaskGraph"):
        b, e = rate.get(f"{kind}, balanced"), rate.get(f"{kind}, even")
        if b and e:
            print(f"\n{kind}: balanced / even {b / e:.2f}x")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--whale", default=os.path.join(ROOT, "build", "bin",
                                                    "whale"))
    ap.add_argument("--fast", type=int, default=4)
    ap.add_argument("--slow", type=int, default=2)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--pipeline", type=int, metavar="LAYERS",
                    help="pipelined instead: LAYERS equal layers in two "
                    "stages, halves (even) against a cut by the probed rates "
                    "(balanced, auto_parallel)")
    ap.add_argument("--micro", type=int, default=8,
                    help="with --pipeline: micro-batches a step (a 1F1B "
                    "pipeline of two equal stages idles 1 / (MICRO + 1) "
                    "of its step filling and draining)")
    ap.add_argument("--virtual", type=int, default=1,
                    help="with --pipeline: model chunks a stage, "
                    "interleaved (virtual_stages; the bubble a VIRTUAL-th "
                    "of 1F1B's)")
    ap.add_argument("--rounds", type=int, default=1,
                    help="run every plan this many times in turn and take "
                    "the medians (the machine's drift falls on all alike)")
    ap.add_argument("--split", action="store_true",
                    help="tensor parallelism: uneven shards vs equal ones")
    ap.add_argument("--emit-gpu-pack", metavar="DIR",
                    help="compile the GPU plans (shares of one GPU) and a "
                    "run.sh into DIR, to run on a GPU machine")
    ap.add_argument("--collect-gpu", nargs=2, metavar=("DIR", "RESULTS"),
                    help="the table of what DIR/run.sh measured there")
    ap.add_argument("--sms", default="40,88",
                    help="the shares' SMs, comma-separated (Hopper: "
                    "multiples of 8)")
    ap.add_argument("--model", default="H200",
                    help="the GPU's data sheet (its SMs and rates)")
    ap.add_argument("--amp", default="off", choices=("off", "bf16"))
    ap.add_argument("--batch", type=int, default=384,
                    help="the global batch (bench/hetero_mlp.whl's BATCH)")
    ap.add_argument("--shares", metavar="A,B",
                    help="two one-thread devices slowed by the kernel to "
                    "these parts of a core each (cpu:1@share=S, issue 88), "
                    "instead of --fast and --slow threads")
    args = ap.parse_args()
    if args.rounds < 1 or args.virtual < 1 or args.micro < 1:
        ap.error("--rounds, --virtual and --micro take positive integers")
    if args.pipeline and args.pipeline % (2 * args.virtual):
        ap.error(f"--pipeline {args.pipeline}: the even pipeline's "
                 f"{2 * args.virtual} TaskGraphs need a multiple of "
                 f"{2 * args.virtual} layers")
    if args.emit_gpu_pack:
        return emit_gpu_pack(args)
    if args.collect_gpu:
        return collect_gpu(args)
    skip = min(3, args.steps // 4)
    cores = os.cpu_count() or 1
    if args.shares:
        a, b = (float(s) for s in args.shares.split(","))
        # One thread each, alone too: a device named without its threads
        # takes every core when it runs alone, and the ideal (the two
        # alone, summed) would count twice the cores the pair has.
        devices = [f"cpu:1@threads=1,share={a}", f"cpu:1@threads=1,share={b}"]
        names = [f"share {a}", f"share {b}"]
    else:
        devices = [f"cpu:1@threads={args.fast}", f"cpu:1@threads={args.slow}"]
        names = [f"{args.fast} threads", f"{args.slow} threads"]
    threads = 2 if args.shares else args.fast + args.slow
    if cores < threads:
        print(f"note: {cores} cores for {threads} threads: the devices share "
              "cores, so these figures measure the operating system's "
              "sharing, not two devices")

    cluster = tempfile.mktemp(suffix=".json")
    spec = ",".join(devices)
    probe = subprocess.run([args.whale, "devices", "--cluster", spec,
                            "--probe", "-o", cluster], check=True,
                           capture_output=True, text=True)
    print(probe.stdout.rstrip())

    # The scripts: alone, balanced, even. Alone, a device runs the model as
    # written (a split TaskGraph on one device is the model itself; a
    # pipeline's stages both on it).
    temporary = []
    if args.pipeline:
        plain, even_script, balanced_script = deep_scripts(
            args.pipeline, args.micro, args.virtual)
        temporary = [plain, even_script, balanced_script]
        scripts = (plain, (balanced_script, []), (even_script, []))
    elif args.split:
        script = split_script()
        temporary = [script]
        scripts = (SCRIPT, (script, []), (script, ["--even"]))
    else:
        scripts = (SCRIPT, (SCRIPT, []), (SCRIPT, ["--even"]))
    alone_script, (b_script, b_flags), (e_script, e_flags) = scripts
    alone = [one_device_cluster(cluster, i) for i in range(2)]
    try:
        # Each round runs every plan once, in turn (A B C D A B C D), so
        # that the machine's drift from minute to minute (its GEMMs moved
        # 93.8-107.8 GFLOP/s between probes here) falls on all plans alike;
        # each figure is the median of the rounds, the part of the ideal
        # the median of each round's own.
        measured = {"fast": [], "slow": [], "balanced": [], "even": []}
        for r in range(args.rounds):
            f_rate, _ = samples_per_s(args.whale, devices[0], args.steps,
                                      skip, script=alone_script,
                                      batch=args.batch)
            s_rate, _ = samples_per_s(args.whale, devices[1], args.steps,
                                      skip, script=alone_script,
                                      batch=args.batch)
            b_rate, shares_b = samples_per_s(args.whale, cluster, args.steps,
                                             skip, b_flags, script=b_script,
                                             batch=args.batch)
            e_rate, shares_e = samples_per_s(args.whale, cluster, args.steps,
                                             skip, e_flags, script=e_script,
                                             batch=args.batch)
            for key, value in (("fast", f_rate), ("slow", s_rate),
                               ("balanced", b_rate), ("even", e_rate)):
                measured[key].append(value)
            if args.rounds > 1:
                print(f"round {r + 1}: alone {f_rate:.0f} and {s_rate:.0f}, "
                      f"even {e_rate:.0f}, balanced {b_rate:.0f} "
                      f"({b_rate / (f_rate + s_rate):.1%} of the ideal)",
                      flush=True)
        fast, slow, balanced, even = (statistics.median(measured[k])
                                      for k in ("fast", "slow", "balanced",
                                                "even"))
        rounds_of_ideal = statistics.median(
            b / (f + s) for b, f, s in zip(measured["balanced"],
                                           measured["fast"], measured["slow"]))
        # The simulator's figure for each plan, on the probed rates (each
        # device alone from its own line of the probed cluster).
        p_fast, p_slow = (predicted_samples_per_s(args.whale, a,
                                                  script=alone_script,
                                                  batch=args.batch)
                          for a in alone)
        p_balanced = predicted_samples_per_s(args.whale, cluster, b_flags,
                                             script=b_script, batch=args.batch)
        p_even = predicted_samples_per_s(args.whale, cluster, e_flags,
                                         script=e_script, batch=args.batch)
    finally:
        for path in temporary + alone:
            os.unlink(path)
    ideal = fast + slow

    def row(name, shares, measured, predicted, of_ideal=True):
        ideal_part = f"{measured / ideal:.1%}" if of_ideal else ""
        if name == "balanced" and args.rounds > 1:
            ideal_part += f" (rounds' median {rounds_of_ideal:.1%})"
        print(f"| {name} | {shares} | {measured:.0f} | {predicted:.0f} | "
              f"{predicted / measured - 1:+.1%} | {ideal_part} |")

    print(f"\n| plan | samples per device | samples/s | whale sim | "
          f"sim error | of ideal |")
    print(f"|---|---|---|---|---|---|")
    row(f"{names[0]} alone", args.batch, fast, p_fast, False)
    row(f"{names[1]} alone", args.batch, slow, p_slow, False)
    row("even", shares_e, even, p_even)
    row("balanced", shares_b, balanced, p_balanced)
    print(f"| ideal (sum alone) | | {ideal:.0f} | | | 100% |")
    gain, predicted_gain = balanced / even, p_balanced / p_even
    print(f"\nbalanced / even: {gain:.2f}x measured, {predicted_gain:.2f}x "
          f"predicted by whale sim ({gain / predicted_gain:.0%} of it)")
    os.unlink(cluster)


if __name__ == "__main__":
    main()
