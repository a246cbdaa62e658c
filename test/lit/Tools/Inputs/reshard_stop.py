"""SIGTERM to `whale reshard --apply` at several moments (issue 92 item
16): each run either finishes (exit 0), or stops with exit 143 and says
so, or (a signal in the process's first moments, before its handler is
in place: loading its libraries) dies having begun nothing, or (one
after the work, its handler gone) dies with the new set whole; it never
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
# that some come while it works, on a fast machine or a slow one. The load
# of a CI machine (the other tests beside this one) changes a run's time
# several-fold, so after the fixed fractions the delay moves toward the
# window where the handler is in place: shorter after a run that finished,
# longer after one the signal caught before its handler.
began = time.perf_counter()
start(os.path.join(tmp, "whole")).communicate()
whole = time.perf_counter() - began
delays = [0.0, 0.02] + [whole * f for f in (0.4, 0.6, 0.8, 0.95)]
stopped = finished = early = late = runs = 0
low, high = 0.02, whole
i = 0
while i < len(delays) or (stopped == 0 and i < 24):
    delay = delays[i] if i < len(delays) else (low + high) / 2
    out = os.path.join(tmp, f"out{i}")
    shutil.rmtree(out, ignore_errors=True)
    p = start(out)
    time.sleep(delay)
    p.send_signal(signal.SIGTERM)
    err = p.communicate()[1].decode()
    whole_set = os.path.exists(os.path.join(out, "rank-00000.safetensors"))
    if p.returncode == 143 and "whale: stopped by a signal" in err:
        stopped += 1
    elif p.returncode == 0:
        finished += 1
        high = min(high, delay)
    elif (p.returncode == -signal.SIGTERM and not os.path.exists(out) and
          not os.path.exists(out + ".saving")):
        early += 1
        low = max(low, delay)
    elif p.returncode == -signal.SIGTERM and whole_set:
        # After the work: its handler gone, the process ends as any does.
        late += 1
        high = min(high, delay)
    else:
        print(f"delay {delay}: exit {p.returncode} without its message: {err!r}")
    if os.path.exists(out + ".saving"):
        print(f"delay {delay}: {out}.saving left behind")
    if os.path.exists(out) and not whole_set:
        print(f"delay {delay}: {out} is not a whole set")
    if high - low < 0.005:
        low, high = 0.02, whole * 2
    i += 1
    runs += 1
print(f"stopped with a message: {'yes' if stopped else 'no'}")
print("every run stopped with a message, finished, or began nothing: "
      f"{'yes' if stopped + finished + early + late == runs else 'no'}")
