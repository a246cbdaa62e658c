"""Writes a small image-classification set as .npy files without numpy:
64 images of 3 x 32 x 32 uint8 pixels, noise around a tint, the class the
channel that is tinted (3 classes). A translation-invariant property, which
a convolutional network with global pooling can learn from a few passes."""
import random
import struct
import sys


def save(path, descr, shape, values, fmt):
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (
        descr, ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else ""))
    header += " " * (64 - (10 + len(header) + 1) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)))
        f.write(header.encode())
        f.write(struct.pack("<%d%s" % (len(values), fmt), *values))


rng = random.Random(3)
images, labels = [], []
for i in range(64):
    label = i % 3
    labels.append(label)
    for c in range(3):
        base = 150 if c == label else 90
        images.extend(min(255, max(0, int(rng.gauss(base, 40))))
                      for _ in range(32 * 32))
save(sys.argv[1] + "/images.npy", "|u1", (64, 3, 32, 32), images, "B")
save(sys.argv[1] + "/labels.npy", "|u1", (64,), labels, "B")
