"""Compares the losses of two metrics files (JSON lines): prints how many
steps and whether every loss is the same, else the first difference."""
import json
import sys

a = [json.loads(line)["loss"] for line in open(sys.argv[1])]
b = [json.loads(line)["loss"] for line in open(sys.argv[2])]
if a == b:
    print(f"{len(a)} steps, the same losses")
else:
    diff = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), None)
    print(f"different: {len(a)} and {len(b)} steps, first at {diff}")
