"""Truncates a token corpus while a run maps it: the run must fail with an
error that says the file changed, not die of SIGBUS. Prints the exit
status's kind and the error line for FileCheck.

usage: truncate_while_mapped.py WHALE SCRIPT CORPUS WORKDIR
"""
import os
import shutil
import subprocess
import sys
import time

whale, script, corpus, work = sys.argv[1:5]
os.makedirs(work, exist_ok=True)
mapped = os.path.join(work, "mapped.bin")
shutil.copy(corpus, mapped)
metrics = os.path.join(work, "truncated.jsonl")
if os.path.exists(metrics):
    os.remove(metrics)
proc = subprocess.Popen([whale, "run", script, "--define", "CORPUS=" + mapped,
                         "--steps", "1000000", "--threads", "1",
                         "--metrics", metrics],
                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                        text=True)
t0 = time.time()
while (not os.path.exists(metrics) or os.path.getsize(metrics) == 0) and \
        proc.poll() is None and time.time() - t0 < 120:
    time.sleep(0.01)
os.truncate(mapped, 0)
err = proc.communicate(timeout=120)[1]
kind = "signal %d" % -proc.returncode if proc.returncode < 0 else \
    "exit %d" % proc.returncode
print(kind)
print([line for line in err.splitlines() if "error" in line][-1:])
