"""Compares the losses of a run that recovered from a failure with those
of a run that never failed (metrics files, JSON lines). The recovered run
logs the steps it ran again twice: the last loss of each step counts.
Prints how many steps and whether each is within relative 1e-4 (the
numerical contract), else the first step that is not."""
import json
import sys

recovered = {}
for line in open(sys.argv[1]):
    record = json.loads(line)
    recovered[record["step"]] = record["loss"]
reference = {}
for line in open(sys.argv[2]):
    record = json.loads(line)
    reference[record["step"]] = record["loss"]
if sorted(recovered) != sorted(reference):
    print(f"different steps: {sorted(recovered)} and {sorted(reference)}")
    sys.exit(0)
for step in sorted(reference):
    a, b = recovered[step], reference[step]
    if abs(a - b) > 1e-4 * abs(b):
        print(f"step {step}: {a} against {b}")
        break
else:
    print(f"{len(reference)} steps, within 1e-4 of a run that never failed")
