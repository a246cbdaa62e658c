"""SIGTERM to mpirun (as a scheduler stops a job): every process finishes
the same step (the stop request travels with its losses), the rank files
of that step are saved together, and a run loads them at that step. Prints
one line for FileCheck.

usage: mpi_stop.py MPIRUN WHALE SCRIPT WORKDIR
"""
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time

mpirun, whale, script, work = sys.argv[1:5]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
ck, metrics = os.path.join(work, "ck"), os.path.join(work, "m.jsonl")
proc = subprocess.Popen(shlex.split(mpirun) + [
    "-np", "2", whale, "run", script, "--cluster", "cpu:2@threads=1",
    "--steps", "1000000", "--save", ck, "--save-ranks", "--metrics", metrics],
    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
t0 = time.time()
while (not os.path.exists(metrics) or os.path.getsize(metrics) == 0) and \
        proc.poll() is None and time.time() - t0 < 120:
    time.sleep(0.05)
proc.send_signal(signal.SIGTERM)
_, err = proc.communicate(timeout=120)
m = re.search(r"interrupted after step (\d+); its state is saved in", err)
probe = subprocess.run([whale, "run", script, "--cluster", "cpu:2",
                        "--load", ck, "--steps", "1"],
                       capture_output=True, text=True, timeout=120)
saved = re.search(r"is at step (\d+)", probe.stderr)
if not m or not saved or m.group(1) != saved.group(1):
    print("FAILED", repr(err[-400:]), repr(probe.stderr[-300:]))
else:
    print("saved and loads at the step it stopped after:",
          sorted(os.listdir(ck)))
