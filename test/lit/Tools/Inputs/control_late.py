"""A control file that appears during a run holding bytes that are not a
cluster spec: the run leaves it as it is, says so once, and never echoes
its bytes. Prints "warnings KEPT ECHOED" for FileCheck.

usage: control_late.py WHALE SCRIPT WORKDIR
"""
import os
import signal
import subprocess
import sys
import time

whale, script, work = sys.argv[1:4]
os.makedirs(work, exist_ok=True)
control, metrics = os.path.join(work, "late"), os.path.join(work, "m.jsonl")
for path in (control, metrics):
    if os.path.exists(path):
        os.remove(path)


def lines():
    return sum(1 for _ in open(metrics)) if os.path.exists(metrics) else 0


def wait_for(n):
    t0 = time.time()
    while lines() < n and proc.poll() is None and time.time() - t0 < 120:
        time.sleep(0.01)


proc = subprocess.Popen([whale, "run", script, "--cluster", "cpu:4",
                         "--steps", "1000000", "--control", control,
                         "--metrics", metrics],
                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                        preexec_fn=lambda: signal.signal(signal.SIGINT,
                                                          signal.SIG_DFL))
wait_for(2)
with open(control, "wb") as f:
    f.write(b"cpu:2\xff\x00binary")
wait_for(lines() + 200)
proc.send_signal(signal.SIGTERM)
err = proc.communicate(timeout=120)[1]
print(err.count(b"was left as it is"), os.path.exists(control),
      b"\xff" in err or b"binary" in err)
