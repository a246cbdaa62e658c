"""SIGTERM to `whale reshard --apply` at several moments (issue 92 item
16): each run either finishes (exit 0), or stops with exit 143 and says
so, or (a signal in the process's first moments, before its handler is
in place: loading its libraries) dies having begun nothing; it never
leaves OUT.saving behind, and OUT is either absent or a whole set
(rank-00000.safetensors in it). Prints what it saw:

    python reshard_stop.py WHALE SCRIPT CKPT TMP
"""
import os
import shutil
import signal
import subprocess
import sys
import time

whale, script, ckpt, tmp = sys.argv[1:5]


def start(out):
    return subprocess.Popen([whale, "reshard", "--from", script + "@cpu:4",
                             "--to", "cpu:2", "--apply", ckpt, "-o", out],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


# How long a whole run takes here: the signals land at fractions of it, so
# that some come while it works, on a fast machine or a slow one.
began = time.perf_counter()
start(os.path.join(tmp, "whole")).communicate()
whole = time.perf_counter() - began
delays = [0.0, 0.02] + [whole * f for f in (0.4, 0.6, 0.8, 0.95)]
stopped = finished = early = 0
for i, delay in enumerate(delays):
    out = os.path.join(tmp, f"out{i}")
    shutil.rmtree(out, ignore_errors=True)
    p = start(out)
    time.sleep(delay)
    p.send_signal(signal.SIGTERM)
    err = p.communicate()[1].decode()
    if p.returncode == 143 and "whale: stopped by a signal" in err:
        stopped += 1
    elif p.returncode == 0:
        finished += 1
    elif (p.returncode == -signal.SIGTERM and not os.path.exists(out) and
          not os.path.exists(out + ".saving")):
        early += 1
    else:
        print(f"delay {delay}: exit {p.returncode} without its message: {err!r}")
    if os.path.exists(out + ".saving"):
        print(f"delay {delay}: {out}.saving left behind")
    if os.path.exists(out) and not os.path.exists(
            os.path.join(out, "rank-00000.safetensors")):
        print(f"delay {delay}: {out} is not a whole set")
print(f"stopped with a message: {'yes' if stopped else 'no'}")
print("every run stopped with a message, finished, or began nothing: "
      f"{'yes' if stopped + finished + early == len(delays) else 'no'}")
