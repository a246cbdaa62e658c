"""Compares the losses of a resumed run with the same steps of an
uninterrupted one (JSON lines metrics): prints how many steps matched,
bit for bit or within the relative tolerance given, else the first
difference. Fails on NaN.

usage: resumed_losses.py RESUMED FULL [TOLERANCE]"""
import json
import math
import sys

resumed = [json.loads(line) for line in open(sys.argv[1])]
full = {r["step"]: r["loss"] for r in map(json.loads, open(sys.argv[2]))}
tolerance = float(sys.argv[3]) if len(sys.argv) > 3 else 0.0
for r in resumed:
    want = full.get(r["step"])
    if want is None or math.isnan(r["loss"]) or \
            abs(r["loss"] - want) > tolerance * abs(want):
        print(f"step {r['step']}: {r['loss']!r} against {want!r}")
        sys.exit(1)
how = "bit for bit" if tolerance == 0 else f"within {tolerance:g}"
print(f"steps {resumed[0]['step']} to {resumed[-1]['step']}: the same "
      f"losses, {how}")
