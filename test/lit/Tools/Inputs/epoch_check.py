"""Reads a sample log (whale run --log-samples) of a text dataset of N
samples and prints the replicas' shares of each step (where they change)
and whether the first epoch, read in position order, holds every sample
exactly once."""
import json
import sys

n = int(sys.argv[2])
order, shares = [], None
for line in open(sys.argv[1]):
    row = json.loads(line)
    now = [len(r) for r in row["replicas"]]
    if now != shares:
        print(f"from step {row['step']}: shares {now}")
        shares = now
    for replica in row["replicas"]:
        order.extend(replica)
epoch = order[:n]
print(f"{len(order)} rows; first epoch: {len(set(epoch))} distinct of {n},"
      f" each once: {sorted(epoch) == list(range(n))}")
