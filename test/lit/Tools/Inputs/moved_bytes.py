"""Compares the bytes a run's ranks send per step with what ZeRO moves.

usage: moved_bytes.py WHALE SCRIPT CLUSTER [--config K=V ...]

Under ZeRO each bucket is reduced to its owners and the parameters are
gathered from them: every member sends each part it holds for another
owner once (the reduce), and every owner sends its part once to each of
the n - 1 others (the gather). Over a group of n ranks that is n - 1 times
the bytes of the buckets, (n - 1) / n of them per rank on average, an
all-reduce's traffic when each is counted once. Prints the runtime's count
(`communicated per step`, over all ranks) beside n - 1 times `whale
plan`'s bytes gathered from and reduced to owners, and whether they are
equal.
"""
import re
import sys

from plan_and_run import plan_and_run

plan, run = plan_and_run(sys.argv[1:])
sent = int(re.search(r"communicated per step: ([0-9]+) bytes over all ranks",
                     run).group(1))
n = plan["replicas"]
expected = 0
for stage in plan["taskgraph_stages"]:
    comm = stage["comm_bytes_per_step"]
    expected += (n - 1) * (comm["gather_from_owners"] + comm["reduce_to_owners"])
print(f"sent {sent} expected {expected} besides {sent - expected}")
