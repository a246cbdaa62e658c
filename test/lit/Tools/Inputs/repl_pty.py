"""Drives `whale repl` through a pseudo-terminal, as a person would: line
editing, completion (Tab) and history kept between sessions (up arrow).

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
    gone quiet; returns everything it printed."""
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
        os.write(fd, k)
        drain(20)
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    return shown.decode(errors="replace"), status


first, status1 = session([b"D = 21\r", b":he\t\r", b"2 * D\r", b":quit\r"])
second, status2 = session([b"\x1b[A\x1b[A\x1b[A\x1b[A\r", b"\x04"])
print("=== first session")
print(first.replace("\r", ""))
print("=== second session")
print(second.replace("\r", ""))
print("exit", os.waitstatus_to_exitcode(status1),
      os.waitstatus_to_exitcode(status2))
