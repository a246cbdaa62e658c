"""What `whale plan --json` says of a script on a cluster, and what two
steps of `whale run` of it print: the two halves the planned-against-
measured checks compare (planned_peak.py, moved_bytes.py).

usage from a check: plan, run = plan_and_run(sys.argv[1:]), the arguments
being WHALE SCRIPT CLUSTER [--config K=V ...].
"""
import json
import subprocess


def plan_and_run(argv):
    whale, script, cluster, *configs = argv
    common = [script, "--cluster", cluster, *configs]
    plan = json.loads(subprocess.run([whale, "plan", *common, "--json"],
                                     check=True, capture_output=True,
                                     text=True).stdout)
    run = subprocess.run([whale, "run", *common, "--steps", "2"], check=True,
                         capture_output=True, text=True).stdout
    return plan, run
