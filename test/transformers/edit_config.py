"""Copies a Hugging Face checkpoint folder (config.json and
model.safetensors) to OUT with config.json's KEY (dotted: into objects)
set to VALUE (JSON), without the tensors named by --drop NAME, and with
--dtype BF16 or F16 every F32 tensor rounded to that type (to nearest,
ties to even), as checkpoints are published: for the import's refusals,
the tied head and the widening of stored weights. With --shards N the
tensors go round-robin into N files that model.safetensors.index.json
names, as large checkpoints are published:

    python edit_config.py SRC OUT [KEY=VALUE | --drop NAME | --dtype T |
                                   --shards N]...

Plain Python: safetensors is an 8-byte header length, a JSON header of
each tensor's dtype, shape and data offsets, then the data."""
import json
import os
import struct
import sys

src, out = sys.argv[1], sys.argv[2]
edits, drop, dtype, shards = [], set(), None, 1
args = sys.argv[3:]
while args:
    if args[0] == "--drop":
        drop.add(args[1])
        args = args[2:]
    elif args[0] == "--dtype":
        dtype = args[1]
        args = args[2:]
    elif args[0] == "--shards":
        shards = int(args[1])
        args = args[2:]
    else:
        edits.append(args[0])
        args = args[1:]


def narrow(raw, to):
    """F32 bytes rounded to BF16 or F16 bytes, to nearest, ties to even."""
    count = len(raw) // 4
    values = struct.unpack("<%df" % count, raw)
    if to == "F16":
        return struct.pack("<%de" % count, *values)
    bits = struct.unpack("<%dI" % count, raw)
    return struct.pack("<%dH" % count, *[
        (b + 0x7FFF + ((b >> 16) & 1)) >> 16 for b in bits])


os.makedirs(out, exist_ok=True)
with open(os.path.join(src, "model.safetensors"), "rb") as f:
    n = struct.unpack("<Q", f.read(8))[0]
    header = json.loads(f.read(n))
    data = f.read()
parts = [({}, b"") for _ in range(shards)]
names = [n for n in header if n != "__metadata__" and n not in drop]
for i, name in enumerate(names):
    info = header[name]
    begin, end = info["data_offsets"]
    raw = data[begin:end]
    if dtype and info["dtype"] == "F32":
        raw = narrow(raw, dtype)
        info = dict(info, dtype=dtype)
    kept, body = parts[i % shards]
    kept[name] = dict(info, data_offsets=[len(body), len(body) + len(raw)])
    parts[i % shards] = (kept, body + raw)
files = ["model.safetensors"] if shards == 1 else [
    "model-%05d-of-%05d.safetensors" % (k + 1, shards) for k in range(shards)]
for file, (kept, body) in zip(files, parts):
    if "__metadata__" in header:
        kept["__metadata__"] = header["__metadata__"]
    text = json.dumps(kept).encode()
    text += b" " * (-len(text) % 8)
    with open(os.path.join(out, file), "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + body)
if shards > 1:
    index = {"metadata": {}, "weight_map": {
        n: files[i % shards] for i, n in enumerate(names)}}
    json.dump(index, open(os.path.join(out, "model.safetensors.index.json"),
                          "w"), indent=1)
config = json.load(open(os.path.join(src, "config.json")))
for edit in edits:
    key, value = edit.split("=", 1)
    node = config
    *path, last = key.split(".")
    for k in path:
        node = node.setdefault(k, {})
    node[last] = json.loads(value)
json.dump(config, open(os.path.join(out, "config.json"), "w"), indent=1)
