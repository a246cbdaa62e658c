"""Reads two `safetensors-tool dump`s, an imported checkpoint's and the fp32
one (fixture/whale.safetensors), and says whether every imported value is
the fp32 value rounded to DTYPE (BF16 or F16: to nearest, ties to even)
and widened back, exactly: python check_widened.py IMPORTED FP32 DTYPE"""
import struct
import sys


def read(path):
    out = {}
    for line in open(path):
        name, _, _, *values = line.split()
        # The dump prints each f32 with 9 digits, enough to read it back.
        out[name] = [f32(float(v)) for v in values]
    return out


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def rounded(x, dtype):
    if dtype == "F16":
        return struct.unpack("<e", struct.pack("<e", x))[0]
    b = struct.unpack("<I", struct.pack("<f", x))[0]
    b = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) << 16
    return struct.unpack("<f", struct.pack("<I", b))[0]


imported, fp32, dtype = read(sys.argv[1]), read(sys.argv[2]), sys.argv[3]
bad = [n for n in fp32 if n not in imported or
       [rounded(x, dtype) for x in fp32[n]] != imported[n]]
print(f"{len(fp32) - len(bad)} of {len(fp32)} tensors are the {dtype} "
      "values widened" + (f"; not {bad[0]}" if bad else ""))
