"""Compares `whale sample --temperature 0`'s output (bytes, in a file) with
the greedy continuation transformers' generate(do_sample=False) gave
(fixture/expected.json): prints both as token ids and "the same" or where
they part. python check_greedy.py OUTPUT EXPECTED"""
import json
import sys

text = open(sys.argv[1], "rb").read()
if text.endswith(b"\n"):
    text = text[:-1]
greedy = json.load(open(sys.argv[2]))["greedy"]
want = greedy["prompt"] + greedy["continuation"]
got = list(text)
print("whale       ", got)
print("transformers", want)
if got == want:
    print("the same")
else:
    at = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b),
              min(len(got), len(want)))
    print(f"they part at token {at}")
