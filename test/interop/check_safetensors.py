#!/usr/bin/env python3
"""Cross-checks Whale's safetensors code against the reference clients.

1. Whale writes a checkpoint; safetensors.numpy.load_file reads it and the
   values are compared with what the writer put there; zlib recomputes the
   checksums Whale keeps in its metadata.
2. safetensors.numpy.save_file writes one; Whale reads it and prints every
   value, which is compared with numpy's arrays.

Run through run_interop.sh with the build's numpy and safetensors
(scripts/interop-env.sh); missing, they are a failure.
"""
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
    from safetensors.numpy import load_file, save_file
except ImportError as e:  # not part of the product's set-up
    sys.exit(f"the reference clients are missing ({e}): run "
             "scripts/interop-env.sh BUILD_DIR")

tool = sys.argv[1]
tmp = tempfile.mkdtemp()

# 1. Ours -> theirs.
ours = os.path.join(tmp, "whale.safetensors")
subprocess.run([tool, "write", ours], check=True)
got = load_file(ours)
expected = {
    "model/linear_0/w": (np.arange(12, dtype=np.float32) * 0.5 - 1).reshape(3, 4),
    "model/linear_0/b": np.arange(4, dtype=np.float64) * 0.25,
    "data/ids": (np.arange(8, dtype=np.int32) * 3 - 7).reshape(2, 2, 2),
    "step": np.array(1000000000000, dtype=np.int64),
}
assert set(got) == set(expected), sorted(got)
for name, want in expected.items():
    assert got[name].dtype == want.dtype, (name, got[name].dtype)
    assert got[name].shape == want.shape, (name, got[name].shape)
    assert np.array_equal(got[name], want), name

# The checksums Whale keeps in the metadata are zlib's CRC-32 of each
# tensor's bytes, so any reader can check a file.
import json
import zlib
with open(ours, "rb") as f:
    n = int.from_bytes(f.read(8), "little")
    header = json.loads(f.read(n))
    data = f.read()
meta = header["__metadata__"]
for name in expected:
    begin, end = header[name]["data_offsets"]
    assert int(meta["whale.crc32." + name]) == zlib.crc32(data[begin:end]), name
rest = "".join(f"{k}={v}\n" for k, v in sorted(meta.items())
               if k != "whale.crc32.__metadata__")
assert int(meta["whale.crc32.__metadata__"]) == zlib.crc32(rest.encode()), rest

# 2. Theirs -> ours.
theirs = os.path.join(tmp, "numpy.safetensors")
rng = np.random.default_rng(0)
arrays = {
    "a/w": rng.standard_normal((5, 3)).astype(np.float32),
    "a/b": rng.standard_normal(7),
    "labels": rng.integers(-5, 5, size=(4,), dtype=np.int64),
    "scalar": np.array(3, dtype=np.int32),
}
save_file(arrays, theirs, metadata={"k": "v"})
out = subprocess.run([tool, "dump", theirs], check=True, capture_output=True,
                     text=True).stdout
seen = {}
for line in out.splitlines():
    name, dtype, shape, *values = line.split(" ")
    seen[name] = (dtype, shape, values)
assert set(seen) == set(arrays), sorted(seen)
for name, arr in arrays.items():
    dtype, shape, values = seen[name]
    assert dtype == {"float32": "F32", "float64": "F64", "int64": "I64",
                     "int32": "I32"}[str(arr.dtype)], (name, dtype)
    assert shape == "[" + ",".join(str(d) for d in arr.shape) + "]", (name, shape)
    parsed = np.array([float(v) for v in values]).reshape(arr.shape)
    assert np.array_equal(parsed.astype(arr.dtype), arr), name

print(f"safetensors {__import__('safetensors').__version__}: "
      f"{len(expected)} tensors read from Whale, {len(arrays)} written for Whale, "
      "all equal")
