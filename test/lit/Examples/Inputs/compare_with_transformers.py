"""Runs llama-transformers.test's comparisons for one fixture: Whale's
losses on one device and split over two, its gradients (one SGD step of lr
100) and its greedy continuation, each against what transformers wrote.
Prints each verdict of test/transformers' compare_losses.py,
check_step.py and check_greedy.py, prefixed by what was run:

    python compare_with_transformers.py DIR FIXTURE SCRIPT TMP [NAME=VALUE]...

SCRIPT is a script of DIR (tiny_llama.whl); its model's body, wrapped in
split { }, is the tensor-parallel plan.
"""
import os
import subprocess
import sys

here, fixture, script_name, tmp = sys.argv[1:5]
defines = []
for d in sys.argv[5:] + [f"DATA={os.path.join(here, fixture, 'tokens.bin')}"]:
    defines += ["--define", d]
script = os.path.join(here, script_name)
out = os.path.join(tmp, fixture)
# The model's body in one split TaskGraph (test/lit/Tools/Inputs/
# split_body.py, which export-hf.test uses too).
split = out + ".split.whl"
subprocess.run([sys.executable,
                os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                             "..", "Tools", "Inputs", "split_body.py"),
                script, split], check=True)
weights = os.path.join(here, fixture, "whale.safetensors")
expected = os.path.join(here, fixture, "expected.json")


def run(*args, **kw):
    return subprocess.run(list(args), check=True, capture_output=True, **kw).stdout


def check(tool, *args):
    return run(sys.executable, os.path.join(here, tool), *args).decode()


def last_line(text):
    return text.strip().splitlines()[-1]


run("whale", "run", script, *defines, "--load", weights, "--metrics", out + ".one.jsonl")
print("one device:", last_line(check("compare_losses.py", out + ".one.jsonl", expected, "1e-5")))
run("whale", "run", split, *defines, "--cluster", "cpu:2", "--load", weights,
    "--metrics", out + ".two.jsonl")
print("split over two:", last_line(check("compare_losses.py", out + ".two.jsonl", expected, "1e-5")))

run("whale", "run", script, *defines, "--define", "LR=100.0", "--load", weights,
    "--steps", "1", "--save", out + ".step1.safetensors")
dumps = []
for name, path in [("before", weights), ("whale", out + ".step1.safetensors"),
                   ("transformers", os.path.join(here, fixture, "whale-step1.safetensors"))]:
    dumps.append(f"{out}.{name}.txt")
    with open(dumps[-1], "wb") as f:
        f.write(run("safetensors-tool", "dump", path))
print(check("check_step.py", *dumps, "1e-4").strip())

greedy = run("whale", "sample", script, *defines, "--load", weights, "--prompt",
             "Whale ", "--tokens", "10", "--temperature", "0")
with open(out + ".greedy", "wb") as f:
    f.write(greedy)
print("greedy:", last_line(check("check_greedy.py", out + ".greedy", expected)))
