"""Compares the losses of two metrics files (JSON lines): prints how many
steps and whether every loss is the same, else the first difference.

With --last-per-step, each step's last loss: a recovery writes the steps
it runs again a second time, and how many depends on when the survivors
noticed the death (in step 5's exchange of losses or in step 6), which a
loaded machine decides, not the losses."""
import json
import sys

args = [a for a in sys.argv[1:] if a != "--last-per-step"]
last_per_step = len(args) < len(sys.argv) - 1


def losses(path):
    rows = [json.loads(line) for line in open(path)]
    if not last_per_step:
        return [r["loss"] for r in rows]
    by_step = {}
    for r in rows:
        by_step[r["step"]] = r["loss"]
    return [by_step[s] for s in sorted(by_step)]


a = losses(args[0])
b = losses(args[1])
if a == b:
    print(f"{len(a)} steps, the same losses")
else:
    diff = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), None)
    print(f"different: {len(a)} and {len(b)} steps, first at {diff}")
