"""Compares one SGD step's moves: Whale's (its checkpoint after the step
against the one before) with transformers' (whale-step1.safetensors, the
same weights after torch's step), tensor by tensor, from three
`safetensors-tool dump`s. A step of lr moves each parameter by lr times
its gradient, so this compares every gradient. Prints the worst relative
difference (to each tensor's largest move) and "within TOL" or "outside
TOL": python check_step.py BEFORE WHALE_AFTER TRANSFORMERS_AFTER TOL"""
import math
import struct
import sys


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def read(path):
    out = {}
    for line in open(path):
        name, _, _, *values = line.split()
        if ".optimizer_" not in name:
            out[name] = [f32(float(v)) for v in values]
    return out


before, ours, theirs = (read(p) for p in sys.argv[1:4])
tol = float(sys.argv[4])
worst, where = 0.0, ""
for name, p0 in before.items():
    a = [x - y for x, y in zip(ours[name], p0)]
    b = [x - y for x, y in zip(theirs[name], p0)]
    scale = max(abs(x) for x in b)
    rel = (max(abs(x - y) for x, y in zip(a, b)) / scale if scale > 0
           else max(abs(x) for x in a))
    if not all(math.isfinite(x) for x in a):
        rel = math.inf
    if rel >= worst:
        worst, where = rel, name
print(f"{len(before)} gradients, worst {worst:.1e} ({where})")
print(("within" if worst <= tol else "outside") + f" {tol:g}")
