"""Runs a whale command with its output on a pseudo-terminal, as a person
at a terminal sees it, and prints what the terminal showed (for FileCheck).

usage: run_pty.py WHALE ARGS...
"""
import os
import pty
import sys

pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[1], sys.argv[1:])
shown = b""
while True:
    try:
        chunk = os.read(fd, 65536)
    except OSError:
        break
    if not chunk:
        break
    shown += chunk
os.waitpid(pid, 0)
sys.stdout.write(shown.decode(errors="replace").replace("\r", "\n"))
