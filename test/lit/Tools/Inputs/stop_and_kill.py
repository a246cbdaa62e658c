"""Stops, kills and starves `whale run` while it saves, and checks that the
checkpoint it leaves always loads, at a step it reports.

usage: stop_and_kill.py WHALE SCRIPT WORKDIR

Each case prints one line "CASE: ok" or "CASE: FAILED ..." (FileCheck reads
them). Cases:
  sigterm       SIGTERM mid-run with --save: exit 143, the message names the
                step, and the checkpoint holds that step.
  sigint-ranks  the same with Ctrl-C's SIGINT and --save-ranks on 2 ranks.
  sigkill       SIGKILL at random moments of a run saving rank sets every
                step: after each kill the folder loads whole, and nothing
                but the set is left in it.
  full-disk     a save that cannot write its files (RLIMIT_FSIZE, as a full
                disk: EFBIG): the run fails naming the file, the previous
                set still loads, and no staging folder is left.
"""
import os
import random
import re
import resource
import shutil
import signal
import subprocess
import sys
import time

whale, script, work = sys.argv[1], sys.argv[2], sys.argv[3]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
random.seed(7)


def saving_script(every):
    text = open(script).read().replace(
        "  steps = 200", "  steps = 200\n  save_every = %d" % every)
    path = os.path.join(work, "saving%d.whl" % every)
    open(path, "w").write(text)
    return path


def steps_in(metrics):
    try:
        return sum(1 for _ in open(metrics))
    except FileNotFoundError:
        return 0


def default_signals():
    # As a terminal's foreground job: a shell's background job (and so a
    # test runner's child) may inherit SIGINT ignored, which whale keeps.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start(args, metrics):
    return subprocess.Popen([whale, "run"] + args + ["--metrics", metrics],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, preexec_fn=default_signals)


def wait_for_steps(proc, metrics, n, limit=120):
    t0 = time.time()
    while steps_in(metrics) < n:
        if proc.poll() is not None or time.time() - t0 > limit:
            return False
        time.sleep(0.01)
    return True


def resume_step(ck, cluster):
    # Resume for exactly one more step than saved: read the saved step
    # from the report of a run of `--steps 1` past it.
    probe = subprocess.run([whale, "run", script, "--load", ck, "--steps",
                            "1", "--cluster", cluster],
                           capture_output=True, text=True, timeout=300)
    m = re.search(r"is at step (\d+)", probe.stderr)
    if m:
        return int(m.group(1)), probe
    return None, probe


def report(case, ok, why=""):
    print("%s: %s" % (case, "ok" if ok else "FAILED " + why))
    sys.stdout.flush()


def stop_case(case, sig, extra, cluster):
    ck = os.path.join(work, case)
    metrics = os.path.join(work, case + ".jsonl")
    proc = start([script, "--steps", "100000", "--save", ck,
                  "--cluster", cluster] + extra, metrics)
    if not wait_for_steps(proc, metrics, 3):
        proc.kill()
        return report(case, False, "the run did not start: " +
                      proc.communicate()[1][-400:])
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=120)
    m = re.search(r"interrupted after step (\d+); its state is saved in (.*)",
                  err)
    if proc.returncode != 128 + sig or not m:
        return report(case, False, "exit %d, %r" % (proc.returncode,
                                                    err[-400:]))
    step = int(m.group(1))
    saved, probe = resume_step(ck, cluster)
    if saved != step:
        return report(case, False, "stopped after step %d, loads step %s: %s"
                      % (step, saved, probe.stderr[-300:]))
    # A signal during a save never leaves its temporary behind.
    left = [n for d in (work, ck) if os.path.isdir(d) for n in os.listdir(d)
            if ".tmp" in n or n.endswith(".saving")]
    if left:
        return report(case, False, "left " + ", ".join(left))
    report(case, True)


stop_case("sigterm", signal.SIGTERM, [], "cpu:1")
stop_case("sigint-ranks", signal.SIGINT, ["--save-ranks"], "cpu:2")

# SIGKILL: a run that saves its rank set after every step, killed at random
# moments; every folder it leaves loads whole.
ck = os.path.join(work, "killed")
every = saving_script(1)
failures = []
for trial in range(8):
    metrics = os.path.join(work, "killed%d.jsonl" % trial)
    proc = start([every, "--steps", "100000", "--save", ck, "--save-ranks",
                  "--cluster", "cpu:2"], metrics)
    # After the second step's line the first step's set is in place.
    if not wait_for_steps(proc, metrics, 2):
        proc.kill()
        failures.append("trial %d did not start: %s" %
                        (trial, proc.communicate()[1][-300:]))
        continue
    time.sleep(random.uniform(0.0, 0.3))
    proc.kill()
    proc.communicate()
    saved, probe = resume_step(ck, "cpu:2")
    if saved is None:
        failures.append("trial %d: %s" % (trial, probe.stderr[-300:]))
    names = sorted(os.listdir(ck))
    if any(not re.fullmatch(r"rank-\d{5}\.safetensors(\.tmp\d+)?", n)
           for n in names):
        failures.append("trial %d left %s" % (trial, names))
report("sigkill", not failures, "; ".join(failures))

# A full disk: the files may not grow past 64 KiB (the rank files are
# larger); the run's save fails and the set saved before stays.
ck = os.path.join(work, "full")
metrics = os.path.join(work, "full.jsonl")
first = subprocess.run([whale, "run", script, "--steps", "2", "--save", ck,
                        "--save-ranks", "--cluster", "cpu:2"],
                       capture_output=True, text=True, timeout=300)


def small_files():
    default_signals()
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (64 << 10, 64 << 10))


full = subprocess.run([whale, "run", script, "--load", ck, "--steps", "4",
                       "--save", ck, "--save-ranks", "--cluster", "cpu:2"],
                      capture_output=True, text=True, timeout=300,
                      preexec_fn=small_files)
saved, probe = resume_step(ck, "cpu:2")
problems = []
if first.returncode != 0:
    problems.append("the first save failed: " + first.stderr[-300:])
if full.returncode == 0 or "cannot write checkpoint" not in full.stderr:
    problems.append("the starved save did not fail as it should: %d %r" %
                    (full.returncode, full.stderr[-300:]))
if saved != 2:
    problems.append("the folder loads step %s, not 2: %s" %
                    (saved, probe.stderr[-300:]))
if os.path.exists(ck + ".saving"):
    problems.append("the staging folder was left")
report("full-disk", not problems, "; ".join(problems))

# The REPL's :save, killed at random moments of a session that saves after
# each new definition: whatever pair of files it leaves, :load takes the
# tensors only with the script they were saved with (y holds the number
# of the last definition K<n> of that script), or refuses them.
repl_script = os.path.join(work, "session.whl")
lines = []
for n in range(1, 400):
    lines += ["K%d = %d" % (n, n), "y = randn([384, 384]) * 0 + %d" % n,
              ":save " + repl_script]
feed = "\n".join(lines) + "\n"


def load_session():
    out = subprocess.run([whale, "repl"], input=":load %s\n:list\ny\n" %
                         repl_script, capture_output=True, text=True,
                         timeout=120)
    return out.stdout + out.stderr


def consistent(text):
    ks = [int(k) for k in re.findall(r"^K(\d+) = ", text, re.M)]
    if not ks:
        return True  # nothing saved yet
    if "was saved with another version of its script" in text:
        return True  # refused, not mixed
    m = re.search(r"^\[\[ *(\d+)\.", text, re.M)
    return m is not None and int(m.group(1)) == max(ks)


failures = []
for trial in range(6):
    for path in (repl_script, repl_script + ".safetensors"):
        if os.path.exists(path):
            os.remove(path)
    proc = subprocess.Popen([whale, "repl"], stdin=subprocess.PIPE,
                            stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, text=True)
    try:
        proc.stdin.write(feed)
        proc.stdin.flush()
    except BrokenPipeError:
        pass
    time.sleep(random.uniform(0.2, 0.8))
    proc.kill()
    proc.wait()
    text = load_session()
    if not consistent(text):
        failures.append("trial %d: %s" % (trial, text[-300:]))
report("repl-sigkill", not failures, "; ".join(failures))


# A full disk under :save: the tensors cannot be written (RLIMIT_FSIZE);
# :save says so and the pair saved before still loads whole.
def starve_then_load():
    for path in (repl_script, repl_script + ".safetensors"):
        if os.path.exists(path):
            os.remove(path)
    first = subprocess.run([whale, "repl"], input="K1 = 1\ny = randn([2, 2])"
                           " * 0 + 1\n:save %s\n" % repl_script,
                           capture_output=True, text=True, timeout=120)
    starved = subprocess.run(
        [whale, "repl"], input=":load %s\nK2 = 2\ny = randn([256, 256]) * 0 "
        "+ 2\n:save %s\n" % (repl_script, repl_script), capture_output=True,
        text=True, timeout=120, preexec_fn=small_files)
    return first, starved, load_session()


first, starved, text = starve_then_load()
problems = []
if "wrote 1 definitions" not in first.stdout:
    problems.append("the first save failed: " + first.stdout + first.stderr)
if "cannot write checkpoint" not in starved.stderr:
    problems.append("the starved save did not fail: " + starved.stderr[-300:])
if "K2" in text or not consistent(text) or \
        "loaded the tensors" not in text:
    problems.append("after it, :load gave " + text[-300:])
report("repl-full-disk", not problems, "; ".join(problems))

# A bundle compiled again onto a full disk: the compile fails with the
# system's reason (never a bare "LLVM ERROR: IO failure"), and the bundle
# compiled before still runs, with no staging folder left.
bundle = os.path.join(work, "bundle")
first = subprocess.run([whale, "compile", script, "--emit=bundle", "-o",
                        bundle], capture_output=True, text=True, timeout=300)


def tiny_files():
    default_signals()
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (8 << 10, 8 << 10))


again = subprocess.run([whale, "compile", script, "--emit=bundle", "-o",
                        bundle, "--cluster", "cpu:2"], capture_output=True,
                       text=True, timeout=300, preexec_fn=tiny_files)
runner = os.path.join(os.path.dirname(shutil.which(whale) or whale),
                      "whale-exec")
ran = subprocess.run([runner, bundle, "--steps", "2"], capture_output=True,
                     text=True, timeout=300)
problems = []
if first.returncode != 0:
    problems.append("the first compile failed: " + first.stderr[-300:])
if again.returncode == 0 or "LLVM ERROR" in again.stderr or \
        "whale: error:" not in again.stderr:
    problems.append("the starved compile: %d %r" % (again.returncode,
                                                    again.stderr[-300:]))
if ran.returncode != 0:
    problems.append("the bundle before does not run: " + ran.stderr[-300:])
if os.path.exists(bundle + ".saving"):
    problems.append("the staging folder was left")
report("bundle-full-disk", not problems, "; ".join(problems))

# whale-exec stops as whale run does: SIGTERM mid-run with --save ends it
# after the step it is on with exit 143, that step saved, and the bundle
# resumes from it at the next step.
ck = os.path.join(work, "exec-stop.safetensors")
metrics = os.path.join(work, "exec-stop.jsonl")
proc = subprocess.Popen([runner, bundle, "--steps", "100000", "--save", ck,
                         "--metrics", metrics], stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE, text=True,
                        preexec_fn=default_signals)
problems = []
if not wait_for_steps(proc, metrics, 3):
    proc.kill()
    problems.append("whale-exec did not start: " + proc.communicate()[1][-300:])
else:
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    m = re.search(r"interrupted after step (\d+); its state is saved in", err)
    if proc.returncode != 128 + signal.SIGTERM or not m:
        problems.append("exit %d, %r" % (proc.returncode, err[-300:]))
    else:
        step = int(m.group(1))
        again = subprocess.run([runner, bundle, "--load", ck, "--steps",
                                str(step + 1)], capture_output=True, text=True,
                               timeout=300)
        if "steps %d to %d" % (step + 1, step + 1) not in again.stdout:
            problems.append("stopped after step %d, resumed: %r %r" %
                            (step, again.stdout[-200:], again.stderr[-200:]))
report("exec-sigterm", not problems, "; ".join(problems))
