#!/usr/bin/env python3
"""Predicted against measured iteration time, for plans on this machine.

For each plan: `whale profile` times its events here, `whale sim --profile`
predicts one iteration, and `whale run --metrics` trains it; the measured
iteration is the median of the step-to-step times after the first steps.
No plan puts more threads on the machine than it has cores, and every run
binds them to cores of their own (WHALE_PIN_THREADS=1). Every plan is
profiled, predicted and measured once per round; the table compares the
medians and gives the spread of the measured runs (the machine's own noise).
It also compares the minimums: on a shared machine whose noise only adds
time (other tenants, a slow spell), the fastest round of each is the
closest to the machine's own speed, for the profile as for the run.
And it compares each prediction with the profiling run it came from (its
typical step, read from the run's trace): that run's events are the
replay's inputs, so this tells the replay's own error (how it composes
event times into an iteration: waits, overlap, bubbles) apart from how
much the machine's speed moved between that run and the measured one.
Last, each plan is predicted once more from all its rounds' profiles
together (`whale sim` given several takes each event's median), against
the median of its measured runs: the machine's moments pooled on both
sides.

    python3 bench/sim_accuracy.py [--rounds 5] [--steps 20] [--only NAME]
                                  [--skip NAME]

On another machine (one with more cores, or a GPU; no MLIR needed there)
the profiling runs and the measured runs go there as compiled plans, and
the profiles and predictions are made here from what comes back
(docs/aot.md):

    python3 bench/sim_accuracy.py --emit-pack DIR [--rounds R] [--steps S]
    DIR/run.sh RESULTS          # there, with whale-exec on the PATH
    python3 bench/sim_accuracy.py --collect DIR RESULTS
"""
import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Every run here, profiling and measured alike, binds its ranks' threads to
# cores of their own in device order (runtime/core/CpuPlacement.h): left to
# the scheduler, where they land differs from process to process, and on
# cores with two hardware threads each that moved a plan's step by up to
# 30% between a profiling run and a measured one.
os.environ.setdefault("WHALE_PIN_THREADS", "1")
SCALED = os.path.join(ROOT, "examples", "gpt_scaled.whl")
GPT = os.path.join(ROOT, "examples", "gpt.whl")

# A small GPT: 4 blocks of width 128 over 64 tokens, a 256-token vocabulary.
SMALL = ["D=128", "T=64", "VOCAB=256", "HEADS=4", "LAYERS=4", "BATCH=16"]

# name, script, cluster, defines[, configs]
PLANS = [
    ("one device, 2 threads", GPT, "cpu:1@threads=2", []),
    ("one device, 1 thread", GPT, "cpu:1@threads=1", []),
    ("accumulation m=4", SCALED, "cpu:1@threads=2",
     SMALL + ["TP=1", "MICRO=4", "STAGES=2"]),
    ("data parallel 2", SCALED, "cpu:2@threads=1",
     SMALL + ["TP=1", "MICRO=1", "STAGES=2"]),
    ("data parallel 2, ZeRO-1", SCALED, "cpu:2@threads=1",
     SMALL + ["TP=1", "MICRO=1", "STAGES=2"], ["shard_optimizer=true"]),
    ("pipeline 2 GPipe m=4", SCALED, "cpu:2@threads=1",
     SMALL + ["TP=1", "MICRO=4", "SCHEDULE=gpipe"]),
    ("pipeline 2 1F1B m=4", SCALED, "cpu:2@threads=1",
     SMALL + ["TP=1", "MICRO=4"]),
    ("pipeline 2 1F1B m=8", SCALED, "cpu:2@threads=1",
     SMALL + ["TP=1", "MICRO=8"]),
    ("gpt.whl pipeline 2 1F1B m=4", GPT, "cpu:2@threads=1", []),
    # Four TaskGraphs as two chunks on each of two stages.
    ("pipeline 2 interleaved v=2 m=4", SCALED, "cpu:2@threads=1",
     SMALL + ["TP=1", "MICRO=4", "STAGES=4"], ["virtual_stages=2"]),
    ("tensor parallel 2", SCALED, "cpu:2@threads=1",
     SMALL + ["TP=2", "MICRO=1"]),
    ("tensor parallel 2, rows shared", SCALED, "cpu:2@threads=1",
     SMALL + ["TP=2", "MICRO=1"], ["split_rows=whole"]),
    ("uneven batches (rates 2:1)", SCALED,
     "cpu:1@threads=1,flops=2e10,cpu:1@threads=1,flops=1e10",
     SMALL + ["TP=1", "MICRO=1", "BATCH=24"]),
    ("uneven shards (rates 3:1)", SCALED,
     "cpu:1@threads=1,flops=3e10,cpu:1@threads=1,flops=1e10",
     SMALL + ["TP=2", "MICRO=1"]),
    ("hybrid: replicate + split head", os.path.join(ROOT, "examples",
                                                    "classify_100k.whl"),
     "cpu:2@threads=1", ["INPUT=512", "FEATURES=256", "CLASSES=8192"]),
    # Experts split over the ranks: two all-to-alls a layer each way.
    ("experts split (all-to-all)", os.path.join(ROOT, "examples",
                                                "moe_gpt.whl"),
     "cpu:2@threads=1", ["D=128", "T=64", "BATCH=16"]),
    # Convolutions, batch statistics summed over the replicas in the
    # forward, and a split classifier.
    ("ResNet-50 + split head", os.path.join(ROOT, "examples",
                                            "resnet50_100k.whl"),
     "cpu:2@threads=1", ["SIZE=32", "CLASSES=1000", "BATCH=8"]),
]

# Plans of one GPU, for a pack made with --gpu (their runs need one).
GPU_PLANS = [
    ("GPU: one device", GPT, "cuda:0", []),
    ("GPU: accumulation m=4", SCALED, "cuda:0",
     SMALL + ["TP=1", "MICRO=4", "STAGES=2"]),
    ("GPU: GPT 12 x 768, context 256", SCALED, "cuda:0",
     ["D=768", "T=256", "VOCAB=256", "HEADS=12", "LAYERS=12", "BATCH=16",
      "TP=1", "MICRO=1", "STAGES=2"]),
    # Two ranks as two contexts of the one GPU (each priced as half of it),
    # reducing and sending in its memory: the CPU plans of the same names.
    ("GPU: data parallel 2, contexts of one GPU", SCALED, "cuda:0,cuda:0",
     SMALL + ["TP=1", "MICRO=1", "STAGES=2"]),
    ("GPU: pipeline 2 1F1B m=4, contexts of one GPU", SCALED,
     "cuda:0,cuda:0", SMALL + ["TP=1", "MICRO=4"]),
]


def whale(binary, args):
    out = subprocess.run([binary] + args, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(" ".join(args) + f": exit {out.returncode}\n" +
                           out.stderr)
    return out.stdout


def script_flags(script, cluster, defines, configs=()):
    """The script, its cluster and its --define and --config flags."""
    flags = [script, "--cluster", cluster]
    for d in defines:
        flags += ["--define", d]
    for c in configs:
        flags += ["--config", c]
    return flags


def median_step(metrics):
    """The median step-to-step time of a metrics file after the third."""
    times = [json.loads(l)["time_s"] for l in open(metrics)]
    return statistics.median([b - a for a, b in zip(times, times[1:])][3:])


def measured_iteration(binary, flags, steps, tmp):
    """Trains `steps` steps; the median step-to-step time after the third."""
    metrics = os.path.join(tmp, "m.jsonl")
    whale(binary, ["run"] + flags + ["--steps", str(steps), "--metrics",
                                     metrics])
    return median_step(metrics)


def predict(binary, flags, dbs):
    """`whale sim`'s iteration for `flags` from the profile databases."""
    profiles = []
    for db in dbs:
        profiles += ["--profile", db]
    return json.loads(whale(binary, ["sim"] + flags + profiles +
                            ["--json"]))["iteration_s"]


def flags_of(plan):
    name, script, cluster, defines, *configs = plan
    return script_flags(script, cluster, defines,
                        configs[0] if configs else ())


def text_corpus(bundle):
    """The folder or file of a compiled plan's text data, or None."""
    data = json.load(open(os.path.join(bundle, "plan.json")))["data"]
    return data["path"] if data["kind"] in ("text", "tokens") else None


def emit_pack(args, chosen):
    """Each plan compiled twice into DIR (with op sites, for the profiling
    runs; without, for the measured runs), its text corpus beside it, and
    DIR/run.sh, which runs them round by round there."""
    os.makedirs(args.emit_pack, exist_ok=True)
    lines = ["#!/usr/bin/env bash",
             "# Made by bench/sim_accuracy.py --emit-pack: the profiling and",
             "# measured runs of each plan, round by round (this machine's",
             "# speed drifts); bring RESULTS back to --collect.",
             "set -uo pipefail  # a plan that fails is said, the rest run",
             'here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"',
             'out="${1:?usage: run.sh RESULTS}"',
             'mkdir -p "$out"',
             'exec_="${WHALE_EXEC:-whale-exec}"',
             "# Threads bound as the bench binds them here.",
             'export WHALE_PIN_THREADS="${WHALE_PIN_THREADS:-1}"',
             "# Where they are bound: the machine's cores, for the record.",
             'lscpu > "$out/lscpu.txt" 2>&1 || true']
    for i, plan in enumerate(chosen):
        flags = flags_of(plan)
        base = os.path.join(args.emit_pack, f"plan-{i}")
        for kind, extra in (("profile", ["--trace-sites"]), ("run", [])):
            folder = f"{base}-{kind}"
            shutil.rmtree(folder, ignore_errors=True)
            whale(args.whale, ["compile"] + flags + extra +
                  ["--emit=bundle", "-o", folder])
        corpus = text_corpus(f"{base}-run")
        if corpus:  # links kept: the text reader skips them
            target = f"{base}-data"
            shutil.rmtree(target, ignore_errors=True)
            if os.path.isdir(corpus):
                shutil.copytree(corpus, target, symlinks=True)
            else:
                shutil.copy(corpus, target)
        print(f"packed {plan[0]}", flush=True)
    lines.append(f"for round in $(seq 1 {args.rounds}); do")
    for i, plan in enumerate(chosen):
        data = (f' --data "$here/plan-{i}-data"'
                if os.path.exists(os.path.join(args.emit_pack,
                                               f"plan-{i}-data")) else "")
        lines += [
            f'  echo "round $round: {plan[0]}"',
            f'  "$exec_" "$here/plan-{i}-profile" --steps 24{data} '
            f'--profile-trace "$out/trace-{i}-$round.json" --trace-every 2 '
            f'> "$out/log-{i}.txt" 2>&1 || echo "  profiling run failed"',
            f'  "$exec_" "$here/plan-{i}-run" --steps {args.steps}{data} '
            f'--metrics "$out/metrics-{i}-$round.jsonl" '
            f'>> "$out/log-{i}.txt" 2>&1 || echo "  measured run failed"']
    lines.append("done")
    json.dump({"plans": [p[0] for p in chosen], "rounds": args.rounds},
              open(os.path.join(args.emit_pack, "plans.json"), "w"), indent=1)
    script = os.path.join(args.emit_pack, "run.sh")
    open(script, "w").write("\n".join(lines) + "\n")
    os.chmod(script, 0o755)
    print(f"{len(chosen)} plans in {args.emit_pack}; there: run.sh RESULTS")


def collect(args):
    """Profiles from the traces the pack's runs made, predictions from
    them here, against the runs' measured steps."""
    pack, results = args.collect
    names = json.load(open(os.path.join(pack, "plans.json")))
    rounds = names["rounds"]
    chosen = [p for p in PLANS + GPU_PLANS if p[0] in names["plans"]]
    chosen.sort(key=lambda p: names["plans"].index(p[0]))
    predicted = {p[0]: [] for p in chosen}
    measured = {p[0]: [] for p in chosen}
    profiled = {p[0]: [] for p in chosen}
    costs = {p[0]: [] for p in chosen}
    pooled = {}
    with tempfile.TemporaryDirectory() as tmp:
        for i, plan in enumerate(chosen):
            flags, dbs = flags_of(plan), []
            for r in range(1, rounds + 1):
                trace = os.path.join(results, f"trace-{i}-{r}.json")
                metrics = os.path.join(results, f"metrics-{i}-{r}.jsonl")
                if not (os.path.exists(trace) and os.path.exists(metrics)):
                    continue
                db = os.path.join(tmp, f"db-{i}-{r}.json")
                whale(args.whale, ["profile"] + flags + ["--from-trace",
                                                         trace, "-o", db])
                dbs.append(db)
                profiled[plan[0]].append(typical_step(trace))
                costs[plan[0]].append(traced_over_untraced(trace))
                predicted[plan[0]].append(predict(args.whale, flags, [db]))
                measured[plan[0]].append(median_step(metrics))
            if dbs:
                pooled[plan[0]] = predict(args.whale, flags, dbs)
    return [p for p in chosen if predicted[p[0]]], predicted, measured, \
        profiled, costs, pooled, rounds


def typical_step(trace):
    """The profiling run's typical step, as `whale profile` keeps it: of the
    driver's steps after the first, the mean of the middle half by
    length."""
    events = json.load(open(trace))["traceEvents"]
    steps = sorted((e["ts"], e["dur"]) for e in events
                   if e.get("cat") == "driver" and e.get("ph") == "X")
    lengths = sorted(dur for _, dur in steps[1:])
    quarter = len(lengths) // 4
    kept = lengths[quarter:len(lengths) - quarter]
    return sum(kept) / len(kept) * 1e-6


def step_spans(trace):
    """The steps of a trace made with --trace-every: (start, length in us,
    traced), in order."""
    events = json.load(open(trace))["traceEvents"]
    return sorted((e["ts"], e["dur"], e["cat"] == "driver") for e in events
                  if e.get("ph") == "X" and e.get("name") == "step" and
                  e.get("cat") in ("driver", "untraced"))


def traced_over_untraced(trace):
    """The median over a trace's pairs (a traced step and the untraced one
    after it, the first pair left out) of traced / untraced; None when the
    trace has no such pairs."""
    steps = step_spans(trace)
    ratios = [a[1] / b[1] for a, b in zip(steps, steps[1:])
              if a[2] and not b[2] and b[1] > 0][1:]
    for r in ratios:
        if not math.isfinite(r):
            raise RuntimeError(f"{trace}: a step of no finite length")
    return statistics.median(ratios) if ratios else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--whale", default=os.path.join(ROOT, "build", "bin",
                                                    "whale"))
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=5,
                    help="profile, predict and measure every plan this many "
                    "times, round by round; medians are compared")
    ap.add_argument("--only", help="run the plans whose name holds this")
    ap.add_argument("--skip", help="not the plans whose name holds this")
    ap.add_argument("--emit-pack", metavar="DIR",
                    help="compile the plans and a run.sh into DIR, to "
                    "profile and measure on another machine")
    ap.add_argument("--gpu", action="store_true",
                    help="with --emit-pack: the plans of one GPU too")
    ap.add_argument("--collect", nargs=2, metavar=("DIR", "RESULTS"),
                    help="predict here from the traces and metrics that "
                    "DIR/run.sh wrote into RESULTS there")
    args = ap.parse_args()
    plans = PLANS + (GPU_PLANS if args.gpu and args.emit_pack else [])
    chosen = [p for p in plans if (not args.only or args.only in p[0]) and
              (not args.skip or args.skip not in p[0])]
    if args.emit_pack:
        return emit_pack(args, chosen)
    if args.collect:
        return report(*collect(args))
    predicted = {p[0]: [] for p in chosen}
    measured = {p[0]: [] for p in chosen}
    profiled = {p[0]: [] for p in chosen}
    costs = {p[0]: [] for p in chosen}
    pooled = {}
    with tempfile.TemporaryDirectory() as tmp:
        # Round by round, so that each plan's samples are spread over the
        # run: this machine's speed drifts over minutes.
        for round_ in range(args.rounds):
            for i, (name, script, cluster, defines,
                    *configs) in enumerate(chosen):
                flags = script_flags(script, cluster, defines,
                                     configs[0] if configs else ())
                # Kept for the pooled prediction at the end.
                db = os.path.join(tmp, f"db-{i}-{round_}.json")
                trace = os.path.join(tmp, "profile-trace.json")
                # Every other step of its run traced: the steps between
                # tell what tracing cost (bench/trace_cost.py).
                whale(args.whale, ["profile"] + flags + [
                    "-o", db, "--trace", trace, "--trace-every", "2"])
                profiled[name].append(typical_step(trace))
                costs[name].append(traced_over_untraced(trace))
                sim = json.loads(whale(args.whale, ["sim"] + flags +
                                       ["--profile", db, "--json"]))
                predicted[name].append(sim["iteration_s"])
                measured[name].append(
                    measured_iteration(args.whale, flags, args.steps, tmp))
                print(f"round {round_ + 1}: {name:34s} predicted "
                      f"{predicted[name][-1] * 1e3:8.2f} ms  measured "
                      f"{measured[name][-1] * 1e3:8.2f} ms  profiling run "
                      f"{profiled[name][-1] * 1e3:8.2f} ms", flush=True)
        for i, plan in enumerate(chosen):
            pooled[plan[0]] = predict(
                args.whale, flags_of(plan),
                [os.path.join(tmp, f"db-{i}-{r}.json")
                 for r in range(args.rounds)])
    return report(chosen, predicted, measured, profiled, costs, pooled,
                  args.rounds)


def report(chosen, predicted, measured, profiled, costs, pooled, rounds):
    """The table and the error summaries, by medians, minimums, each
    prediction against its profiling run, and pooled profiles; and what
    tracing cost the profiling runs' steps (traced against untraced steps
    of the same process)."""
    print()
    print("| plan | cluster | predicted ms | measured ms | spread | error "
          "| fastest predicted ms | fastest measured ms | error "
          "| profiling runs ms | replay vs its profiling run "
          "| pooled profiles ms | error | traced / untraced, one process |")
    errors, fastest_errors, replay_errors, pooled_errors = [], [], [], []
    trace_costs = []
    for name, _, cluster, *_ in chosen:
        p = statistics.median(predicted[name])
        m = statistics.median(measured[name])
        spread = (max(measured[name]) - min(measured[name])) / m
        error = (p - m) / m
        errors.append(abs(error))
        fp, fm = min(predicted[name]), min(measured[name])
        fastest_errors.append(abs(fp - fm) / fm)
        # Each round's prediction against its own profiling run; the
        # median of the rounds.
        replay = statistics.median(
            (a - b) / b for a, b in zip(predicted[name], profiled[name]))
        replay_errors.append(abs(replay))
        pooled_error = (pooled[name] - m) / m
        pooled_errors.append(abs(pooled_error))
        # Traces of an older pack trace every step: no pairs.
        cost = [c for c in costs[name] if c is not None]
        cost = statistics.median(cost) if cost else None
        if cost is not None:
            trace_costs.append(abs(cost - 1))
        print(f"| {name} | {cluster} | {p * 1e3:.2f} | {m * 1e3:.2f} | "
              f"{spread * 100:.1f}% | {error * 100:+.1f}% | {fp * 1e3:.2f} | "
              f"{fm * 1e3:.2f} | {(fp - fm) / fm * 100:+.1f}% | "
              f"{statistics.median(profiled[name]) * 1e3:.2f} | "
              f"{replay * 100:+.1f}% | {pooled[name] * 1e3:.2f} | "
              f"{pooled_error * 100:+.1f}% | "
              f"{'%.3f' % cost if cost is not None else 'n/a'} |")
    for what, errs in (("medians", errors), ("minimums", fastest_errors),
                       ("each prediction against its profiling run",
                        replay_errors),
                       ("all rounds' profiles against the median run",
                        pooled_errors),
                       ("traced against untraced steps in one process",
                        trace_costs)):
        if not errs:
            continue
        errs.sort()
        within = sum(1 for e in errs if e <= 0.05)
        print(f"\n{len(errs)} plans, {rounds} rounds, by {what}: median "
              f"|error| {statistics.median(errs) * 100:.1f}%, worst "
              f"{errs[-1] * 100:.1f}%, {within} within 5%")


if __name__ == "__main__":
    sys.exit(main())
