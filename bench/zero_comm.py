#!/usr/bin/env python3
"""What ZeRO stage 1 costs in communication, against plain data parallel.

    python3 bench/zero_comm.py [--rounds 3] [--steps 30] [--mpirun N] \
        -- SCRIPT.whl [whale run flags]

Each round runs `whale run SCRIPT ...` once with the optimizer state sharded
(`--config shard_optimizer=true`) and once without, both with --no-overlap
so that every collective blocks and its whole time is the rank's, and
prints the median step of each and the last losses (which must agree).
Then one traced run of each says, per rank and step, the time of each
collective from the runtime's own events: plain data parallel all-reduces
the gradients; ZeRO reduces them to their owners and broadcasts the
updated parameters. With --mpirun N the ranks are N MPI processes.
"""
import statistics

from fuse_ab import ab_options, median_step_ms
from overlap import traced_ms_per_step

NAMES = {"all_reduce", "reduce_to_owners", "broadcast"}


def main():
    a, args, whale = ab_options(3)
    zero = ["--config", "shard_optimizer=true", "--no-overlap"]
    plain = ["--no-overlap"]
    ratios = []
    for r in range(a.rounds):
        z, lz = median_step_ms(whale, args, a.steps, extra=zero,
                               launcher=a.launcher)
        p, lp = median_step_ms(whale, args, a.steps, extra=plain,
                               launcher=a.launcher)
        ratios.append(p / z)
        print(f"round {r + 1}: ZeRO-1 {z:.1f} ms, plain {p:.1f} ms "
              f"(ZeRO x{p / z:.3f}); last loss {lz:.6f} / {lp:.6f}")
    print(f"median ZeRO-1 speed x{statistics.median(ratios):.3f} of plain")
    with_zero = traced_ms_per_step(whale, args, a.steps, NAMES, extra=zero,
                                   launcher=a.launcher)
    without = traced_ms_per_step(whale, args, a.steps, NAMES, extra=plain,
                                 launcher=a.launcher)
    for rank, pid in enumerate(sorted(with_zero)):
        z, p = with_zero[pid], without[pid]
        print(f"rank {rank}, ms per step: ZeRO-1 reduce_to_owners "
              f"{z['reduce_to_owners']:.2f} + broadcast {z['broadcast']:.2f} "
              f"(+ all_reduce {z['all_reduce']:.2f}) = "
              f"{sum(z.values()):.2f}; plain all_reduce {p['all_reduce']:.2f}")


if __name__ == "__main__":
    main()
