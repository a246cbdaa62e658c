"""Rewrites a safetensors file with every F32 tensor rounded to DTYPE (BF16
or F16, to nearest, ties to even), stored as DTYPE, or with --as-f32 the
rounded values stored back as F32; metadata kept. Plain Python:

    python narrow.py IN OUT DTYPE [--as-f32]
"""
import json
import struct
import sys

src, out, dtype = sys.argv[1:4]
as_f32 = "--as-f32" in sys.argv[4:]
with open(src, "rb") as f:
    n = struct.unpack("<Q", f.read(8))[0]
    header = json.loads(f.read(n))
    data = f.read()


def narrow(raw):
    count = len(raw) // 4
    if dtype == "F16":
        values = struct.unpack("<%df" % count, raw)
        half = struct.pack("<%de" % count, *values)
        if not as_f32:
            return half
        return struct.pack("<%df" % count, *struct.unpack("<%de" % count, half))
    bits = [(b + 0x7FFF + ((b >> 16) & 1)) >> 16
            for b in struct.unpack("<%dI" % count, raw)]
    if not as_f32:
        return struct.pack("<%dH" % count, *bits)
    return struct.pack("<%dI" % count, *[b << 16 for b in bits])


kept, body = {}, b""
for name, info in header.items():
    if name == "__metadata__":
        # The checksums were of the F32 bytes: the rewritten file has none.
        kept[name] = {k: v for k, v in info.items()
                      if not k.startswith("whale.crc32.")}
        continue
    begin, end = info["data_offsets"]
    raw = data[begin:end]
    if info["dtype"] == "F32":
        raw = narrow(raw)
        if not as_f32:
            info = dict(info, dtype=dtype)
    kept[name] = dict(info, data_offsets=[len(body), len(body) + len(raw)])
    body += raw
text = json.dumps(kept).encode()
text += b" " * (-len(text) % 8)
with open(out, "wb") as f:
    f.write(struct.pack("<Q", len(text)) + text + body)
