"""Compares a Whale run's losses (metrics JSON lines) with transformers'
(fixture/expected.json): prints each step's relative difference and
"within TOL" or "outside TOL". A NaN anywhere is outside."""
import json
import math
import sys

metrics, expected, tol = sys.argv[1], sys.argv[2], float(sys.argv[3])
ours = [json.loads(line)["loss"] for line in open(metrics)]
theirs = json.load(open(expected))["losses"]
if len(ours) != len(theirs):
    print(f"{len(ours)} losses against transformers' {len(theirs)}")
    sys.exit(0)
worst = 0.0
for step, (a, b) in enumerate(zip(ours, theirs), start=1):
    rel = abs(a - b) / abs(b) if math.isfinite(a) and b != 0 else math.inf
    print(f"step {step}: whale {a:.9g} transformers {b:.9g} relative {rel:.1e}")
    worst = max(worst, rel)
print(("within" if worst <= tol else "outside") + f" {tol:g}")
