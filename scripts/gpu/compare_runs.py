#!/usr/bin/env python3
"""Compares a run against its reference under the numerical contract.

    compare_runs.py RUN.jsonl REF.jsonl [RUN.safetensors REF.safetensors]

Losses must agree per step within relative 1e-4; parameters (the
checkpoints' tensors without optimizer state) within 1e-4 of each tensor's
scale, as the equivalence suite compares them (test/unit/EquivalenceSupport.h).
Plain Python: it runs where numpy is not installed. Prints one line and
exits 1 when anything differs.
"""
import json
import math
import struct
import sys


def losses(path):
    return [json.loads(line)["loss"] for line in open(path)]


def tensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, t in header.items():
        if name == "__metadata__" or ".optimizer_" in name:
            continue
        if t["dtype"] != "F32":
            raise SystemExit(f"{path}: {name} is {t['dtype']}, not F32")
        lo, hi = t["data_offsets"]
        out[name] = struct.unpack(f"<{(hi - lo) // 4}f", data[lo:hi])
    return out


def worse(a, b):
    """The larger of a and b, NaN winning: max(0.0, nan) is 0.0, which would
    pass a run of NaNs."""
    return math.nan if math.isnan(a) or math.isnan(b) else max(a, b)


def worst_of(values):
    out = 0.0
    for v in values:
        out = worse(out, v)
    return out


def main():
    run, ref = losses(sys.argv[1]), losses(sys.argv[2])
    if len(run) != len(ref):
        print(f"DIFFERENT: {len(run)} steps against {len(ref)}")
        return 1
    worst = 0.0
    for i, (a, b) in enumerate(zip(run, ref)):
        rel = abs(a - b) / max(abs(b), 1e-12)
        worst = worse(worst, rel)
        if not rel < 1e-4:  # NaN fails too
            print(f"DIFFERENT: step {i + 1} loss {a!r} against {b!r}")
            return 1
    note = f"{len(run)} steps, losses within {worst:.1e}"
    if len(sys.argv) > 4:
        got, want = tensors(sys.argv[3]), tensors(sys.argv[4])
        if set(got) != set(want):
            odd = sorted(set(got) ^ set(want))
            print(f"DIFFERENT: {len(odd)} parameters in one checkpoint only, "
                  f"such as {', '.join(odd[:3])}")
            return 1
        pworst = 0.0
        for name, w in want.items():
            scale = worst_of(abs(v) for v in w)
            if scale < 1e-6:  # moved by rounding noise alone (not NaN)
                continue
            diff = worst_of(abs(a - b) for a, b in zip(got[name], w))
            rel = diff / max(scale, 1e-3)
            pworst = worse(pworst, rel)
            if not rel < 1e-4:  # NaN fails too
                print(f"DIFFERENT: {name} off by {rel:.1e} of its scale")
                return 1
        note += f", {len(want)} parameters within {pworst:.1e}"
    print("SAME: " + note)
    return 0


if __name__ == "__main__":
    sys.exit(main())
