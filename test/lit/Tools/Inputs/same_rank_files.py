"""Checks that two folders of rank files hold the same ranks, tensors,
boxes and bytes: everything but the id of the save (and its checksum),
which each save draws anew."""
import json
import os
import struct
import sys


def read(path):
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    meta = header.pop("__metadata__")
    for key in ("set", "whale.crc32.__metadata__"):
        meta.pop(key, None)
    return header, meta, data[8 + n:]


a, b = sys.argv[1], sys.argv[2]
names = sorted(os.listdir(a))
if names != sorted(os.listdir(b)):
    print("different files:", names, sorted(os.listdir(b)))
    sys.exit(1)
for name in names:
    if read(os.path.join(a, name)) != read(os.path.join(b, name)):
        print("different:", name)
        sys.exit(1)
print(f"{len(names)} rank files, the same")
