"""Writes the .npy files of arrays.test without numpy (the format is a
magic, a header dict padded to 64 bytes, then the data in C order): 200
rows of 6 features and the class of a fixed linear teacher over 3 classes,
in several dtypes and layouts."""
import random
import struct
import sys


def save(path, descr, shape, values, fmt, fortran=False):
    header = "{'descr': '%s', 'fortran_order': %s, 'shape': (%s), }" % (
        descr, "True" if fortran else "False",
        ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else ""))
    pad = 64 - (10 + len(header) + 1) % 64
    header += " " * pad + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)))
        f.write(header.encode())
        f.write(struct.pack("<%d%s" % (len(values), fmt), *values))


out = sys.argv[1]
rng = random.Random(0)
rows, feats = 200, 6
x = [[rng.gauss(0, 1) for _ in range(feats)] for _ in range(rows)]
w = [[rng.gauss(0, 1) for _ in range(3)] for _ in range(feats)]
y = [max(range(3), key=lambda c: sum(r[f] * w[f][c] for f in range(feats)))
     for r in x]
flat = [v for r in x for v in r]
save(out + "/x.npy", "<f4", (rows, feats), flat, "f")
save(out + "/x64.npy", "<f8", (rows, feats), flat, "d")
save(out + "/y.npy", "<i8", (rows,), y, "q")
save(out + "/y32.npy", "<i4", (rows,), y, "i")
save(out + "/yf.npy", "<f4", (rows,), [float(v) for v in y], "f")
save(out + "/x5.npy", "<f4", (rows, 5), [v for r in x for v in r[:5]], "f")
save(out + "/xf.npy", "<f4", (rows, feats),
     [x[r][f] for f in range(feats) for r in range(rows)], "f", fortran=True)
# The same samples as images: 1 channel of 2 x 3 pixels, uint8 (the
# features scaled to [0, 255]), and uint8 labels.
lo, hi = min(flat), max(flat)
pixels = [round(255 * (v - lo) / (hi - lo)) for v in flat]
save(out + "/img.npy", "|u1", (rows, 1, 2, 3), pixels, "B")
save(out + "/y8.npy", "|u1", (rows,), y, "B")
# One feature NaN, and one f8 feature past f32's range: refused, never
# trained into NaN weights.
nan = list(flat)
nan[7 * feats + 2] = float("nan")
save(out + "/xnan.npy", "<f4", (rows, feats), nan, "f")
big = list(flat)
big[3 * feats] = 1e300
save(out + "/xbig.npy", "<f8", (rows, feats), big, "d")
