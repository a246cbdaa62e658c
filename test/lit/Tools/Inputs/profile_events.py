"""Compares two profile databases' events: prints how many events the
first holds, whether all were timed in context, and whether they are the
events the second timed in context (by device and event)."""
import json
import sys


def events(path):
    db = json.load(open(path))
    return {(d["device"], e["event"]): e for d in db["devices"]
            for e in d["events"]}


a, b = events(sys.argv[1]), events(sys.argv[2])
in_context = all(e.get("in_context") for e in a.values())
b_context = {k for k, e in b.items() if e.get("in_context")}
print(f"{len(a)} events, {'all' if in_context else 'not all'} in context, "
      f"{'the same' if set(a) == b_context else 'other'} events as the "
      f"run here")
