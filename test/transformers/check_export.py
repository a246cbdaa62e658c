"""Loads a folder `whale export` wrote with transformers' own
from_pretrained and prints its loss on the fixture's four windows of
tokens (as make_fixture.py computes it), for comparing with Whale's loss of
the same parameters. Needs PyTorch and transformers (a venv outside the
repo); CI does not run it:

    python test/transformers/check_export.py DIR
"""
import os
import sys

import torch
import transformers

HERE = os.path.dirname(os.path.abspath(__file__))
T, BATCH, VOCAB = 16, 4, 256

model = transformers.LlamaForCausalLM.from_pretrained(sys.argv[1]).float().eval()
raw = open(os.path.join(HERE, "fixture", "tokens.bin"), "rb").read()
stream = torch.tensor([int.from_bytes(raw[2 * i:2 * i + 2], "little")
                       for i in range(len(raw) // 2)])
windows = torch.stack([stream[i * T:i * T + T + 1] for i in range(BATCH)])
with torch.no_grad():
    logits = model(input_ids=windows[:, :-1]).logits
loss = torch.nn.functional.cross_entropy(logits.reshape(-1, VOCAB),
                                         windows[:, 1:].reshape(-1))
print(f"transformers loss {loss.item():.9g}")
