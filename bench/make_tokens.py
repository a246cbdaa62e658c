#!/usr/bin/env python3
"""Turns text into the token files `tokens(...)` reads, as nanoGPT prepares
train.bin and val.bin: a byte-level BPE tokenizer (HuggingFace `tokenizers`,
from PyPI, for benchmarks only) trained on the text itself (the machine
reaches PyPI but not the model hubs), the ids written as little-endian
uint16 (uint32 past 65,535 ids), the last tenth held out.

    python3 bench/make_tokens.py TEXT_FILE_OR_FOLDER OUT_PREFIX [--vocab N]

writes OUT_PREFIX.train.bin, OUT_PREFIX.val.bin and OUT_PREFIX.json (the
vocabulary size and dtype to put in the script), then prints them.
"""
import argparse
import json
import os
import sys

import numpy as np
from tokenizers import ByteLevelBPETokenizer


def read_text(path):
    files = [path]
    if os.path.isdir(path):
        files = sorted(os.path.join(d, f) for d, _, fs in os.walk(path)
                       for f in fs)
    return "".join(open(f, encoding="utf-8", errors="replace").read()
                   for f in files)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("text")
    ap.add_argument("out")
    ap.add_argument("--vocab", type=int, default=4096)
    args = ap.parse_args()
    text = read_text(args.text)
    tok = ByteLevelBPETokenizer()
    tok.train_from_iterator([text], vocab_size=args.vocab, min_frequency=2,
                            show_progress=False)
    ids = np.array(tok.encode(text).ids)
    vocab = tok.get_vocab_size()
    dtype = np.uint16 if vocab <= 65536 else np.uint32
    cut = len(ids) * 9 // 10
    ids[:cut].astype("<" + np.dtype(dtype).str[1:]).tofile(
        args.out + ".train.bin")
    ids[cut:].astype("<" + np.dtype(dtype).str[1:]).tofile(
        args.out + ".val.bin")
    meta = {"vocab": vocab, "dtype": np.dtype(dtype).name,
            "train_tokens": int(cut), "val_tokens": int(len(ids) - cut),
            "bytes_per_token": round(len(text.encode()) / max(1, len(ids)), 3)}
    json.dump(meta, open(args.out + ".json", "w"), indent=1)
    print(json.dumps(meta))
    return 0


if __name__ == "__main__":
    sys.exit(main())
