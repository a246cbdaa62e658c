"""Copies the bundle FROM into TO with its manifest edited, for the tests of
what whale-exec refuses.

usage: edit_plan.py FROM TO EDIT
EDIT: drop-param       the first stage's last parameter left out
      param-shape      the first parameter's first extent doubled
      classes=N        data.classes set to N
      kind=K           data.kind set to K
      device=NAME      devices[0].name set to NAME
      schedule=S       train.schedule set to S
      entry=NAME       the first stage's entry point set to NAME
      states=N         train.optimizer_states set to N
"""
import json
import shutil
import sys

src, dst, edit = sys.argv[1:4]
shutil.rmtree(dst, ignore_errors=True)
shutil.copytree(src, dst)
plan = json.load(open(src + "/plan.json"))
stage = plan["libraries"][0]["stages"][0]
key, _, value = edit.partition("=")
if key == "drop-param":
    stage["params"].pop()
elif key == "param-shape":
    stage["params"][0]["shape"][0] *= 2
elif key == "classes":
    plan["data"]["classes"] = int(value)
elif key == "kind":
    plan["data"]["kind"] = value
elif key == "device":
    plan["devices"][0]["name"] = value
elif key == "schedule":
    plan["train"]["schedule"] = value
elif key == "entry":
    stage["entry"] = value
elif key == "states":
    plan["train"]["optimizer_states"] = int(value)
else:
    sys.exit("unknown edit " + edit)
json.dump(plan, open(dst + "/plan.json", "w"), indent=1)
