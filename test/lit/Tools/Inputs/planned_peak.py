"""Compares `whale plan`'s predicted peak per device with what a run measures.

usage: planned_peak.py WHALE SCRIPT CLUSTER [--config K=V ...]

Prints, per stage, the plan's peak (its parameters, the optimizer state,
and the most intermediate tensors alive at once, gathered parameters and
gradients among them), the most any of the stage's devices measured, and
whether the two are within 10% of each other.
"""
import re
import sys

from plan_and_run import plan_and_run

plan, run = plan_and_run(sys.argv[1:])
measured = [int(x) for x in re.search(r"peak memory per device: ([0-9 ]+) bytes",
                                      run).group(1).split()]
replicas = plan["replicas"]
for s, stage in enumerate(plan["taskgraph_stages"]):
    predicted = stage["memory_bytes"]["peak"]
    devices = [plan["grid"][s * replicas + r] for r in range(replicas)]
    most = max(measured[d] for d in devices)
    ratio = most / predicted
    print(f"stage {s}: planned {predicted} measured {most} "
          f"within10 {0.9 <= ratio <= 1.1}")
