#!/usr/bin/env python3
"""ZeRO stages 2 and 3 against stage 1 and plain data parallelism, in one run.

    python3 bench/zero_stages.py [--rounds 3] [--steps 30] [--mpirun N] \
        -- SCRIPT.whl [whale run flags]

Each round runs `whale run SCRIPT ...` four times on the same ranks, in
turn: plain data parallelism, stage 1 (`shard_optimizer`), stage 2
(`shard_gradients`, which differs from stage 1 only where micro-batches
accumulate) and stage 3 (`shard_parameters`), all with their collectives
overlapped as planned,
and prints the median step of each and the last losses (which must
agree to the last digits: stage 2 adds the micro-batches' sums in another
order). Then one traced run of stage 2 and one of stage 3 say, per rank
and step, how much of their communication ran under compute, from the
runtime's own events:
the gathers' and the gradient buckets' time on the rank's communication
track ("overlapped gather_params", "overlapped reduce_to_owners") against
the time the rank waited for them on its compute track ("gather_params
wait", "all_reduce wait"), the first 3 steps left out.
"""
import math
import statistics

from fuse_ab import ab_options, median_step_ms
from overlap import traced_ms_per_step

PLANS = {
    "plain": [],
    "stage 1": ["--config", "shard_optimizer=true"],
    "stage 2": ["--config", "shard_gradients=true"],
    "stage 3": ["--config", "shard_parameters=true"],
}
NAMES = {"overlapped gather_params", "gather_params wait",
         "overlapped reduce_to_owners", "overlapped all_reduce",
         "all_reduce wait"}


def main():
    a, args, whale = ab_options(3)
    ms = {name: [] for name in PLANS}
    for r in range(a.rounds):
        line, losses = [], []
        for name, extra in PLANS.items():
            step, loss = median_step_ms(whale, args, a.steps, extra=extra,
                                        launcher=a.launcher)
            if not math.isfinite(loss) or not math.isfinite(step):
                raise SystemExit(f"{name}: a step or loss is not finite")
            ms[name].append(step)
            line.append(f"{name} {step:.1f} ms")
            losses.append(loss)
        print(f"round {r + 1}: " + ", ".join(line) +
              "; last losses " + " / ".join(f"{l:.6f}" for l in losses))
    plain = statistics.median(ms["plain"])
    for name in PLANS:
        m = statistics.median(ms[name])
        print(f"median {name}: {m:.1f} ms per step (plain x{plain / m:.3f})")
    for stage in ("stage 2", "stage 3"):
        traced = traced_ms_per_step(whale, args, a.steps, NAMES,
                                    extra=PLANS[stage], launcher=a.launcher)
        for rank, pid in enumerate(sorted(traced)):
            t = traced[pid]
            gathered = t["overlapped gather_params"]
            reduced = (t["overlapped reduce_to_owners"] +
                       t["overlapped all_reduce"])
            waited_g, waited_r = t["gather_params wait"], t["all_reduce wait"]
            hidden = lambda total, waited: (
                100 * (1 - min(waited, total) / total) if total > 0 else 0)
            print(f"rank {rank}, ms per step at {stage}: gathers "
                  f"{gathered:.2f} (waited {waited_g:.2f}, "
                  f"{hidden(gathered, waited_g):.0f}% hidden), gradient "
                  f"buckets {reduced:.2f} (waited {waited_r:.2f}, "
                  f"{hidden(reduced, waited_r):.0f}% hidden)")

if __name__ == "__main__":
    main()
