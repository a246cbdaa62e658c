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

With `--config shard_group=s` (hybrid sharding) that happens within each of
the n / s sharding groups of s ranks, and each owner then all-reduces the
part it owns with its copies in the other groups, handing the part to that
all-reduce: over all ranks n / s times the buckets reduced, where there is
more than one group.
"""
import re
import sys

from plan_and_run import plan_and_run

plan, run = plan_and_run(sys.argv[1:])
sent = int(re.search(r"communicated per step: ([0-9]+) bytes over all ranks",
                     run).group(1))
n = plan["replicas"]
s = n
for arg in sys.argv[1:]:
    if arg.startswith("shard_group="):
        s = int(arg.split("=", 1)[1])
groups = n // s
expected = 0
for stage in plan["taskgraph_stages"]:
    comm = stage["comm_bytes_per_step"]
    expected += groups * (s - 1) * (comm["gather_from_owners"] +
                                    comm["reduce_to_owners"])
    if groups > 1:
        expected += groups * comm["reduce_to_owners"]
print(f"sent {sent} expected {expected} besides {sent - expected}")
