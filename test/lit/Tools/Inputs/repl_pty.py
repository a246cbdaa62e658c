"""Drives `whale repl` through a pseudo-terminal, as a person would: line
editing, completion (Tab), history kept between sessions (up arrow), and
Ctrl-C stopping a long training run while the session goes on.

usage: repl_pty.py WHALE HISTORY_FILE; prints what the terminal showed, for
FileCheck, and exits 1 if the REPL does not answer in time.
"""
import os
import pty
import select
import sys
import time

whale, history = sys.argv[1], sys.argv[2]


def session(keys):
    """Runs one session, typing each entry of `keys` once the REPL has
    gone quiet (or, for a (keys, seconds) pair, after that long at most:
    a training run is never quiet); returns everything it printed."""
    env = dict(os.environ, WHALE_HISTORY=history, TERM="xterm")
    pid, fd = pty.fork()
    if pid == 0:
        os.execve(whale, [whale, "repl"], env)
    shown = b""

    def drain(seconds):
        nonlocal shown
        end = time.time() + seconds
        while time.time() < end:
            ready, _, _ = select.select([fd], [], [], 0.2)
            if not ready:
                if shown:
                    return
                continue
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                return
            if not chunk:
                return
            shown += chunk

    drain(20)
    for k in keys:
        k, seconds = k if isinstance(k, tuple) else (k, 20)
        os.write(fd, k)
        drain(seconds)
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    return shown.decode(errors="replace"), status


first, status1 = session([b"D = 21\r", b":he\t\r", b"2 * D\r", b":quit\r"])
second, status2 = session([b"\x1b[A\x1b[A\x1b[A\x1b[A\r", b"\x04"])
# A model that would train for a long time, stopped by Ctrl-C once its
# first progress line shows; then a half-typed line dropped by Ctrl-C.
model = (b"model m(x: f32[B, 4], y: i32[B]) {\r"
         b"  return mean(cross_entropy(x @ param([4, 3]), y))\r"
         b"}\r"
         b"train m {\r"
         b"  data = synthetic(batch = 4, seed = 1)\r"
         b"  optimizer = sgd(lr = 0.1)\r"
         b"  steps = 100000000\r"
         b"  log_every = 1000\r"
         b"}\r")
third, status3 = session([model, (b":train\r", 3), b"\x03", b"1 + 2 + ", b"\x03",
                          b"1 + 1\r", b":quit\r"])
print("=== first session")
print(first.replace("\r", ""))
print("=== second session")
print(second.replace("\r", ""))
print("=== third session")
print(third.replace("\r", ""))
print("exit", os.waitstatus_to_exitcode(status1),
      os.waitstatus_to_exitcode(status2), os.waitstatus_to_exitcode(status3))
