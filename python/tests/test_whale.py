"""The Python package against the issue's contract (docs/python.md): each
object, the data paths, stopping (a callback, Ctrl-C, an exception), the
GIL, NumPy round trips bit for bit, and the same losses as `whale run`.

WHALE_ROOT names the repository (for examples/), WHALE_BIN the `whale`
binary the losses are compared with."""

import json
import os
import signal
import subprocess
import threading
import time

import numpy as np
import pytest

import whale

ROOT = os.environ.get("WHALE_ROOT",
                      os.path.join(os.path.dirname(__file__), "..", ".."))
WHALE_BIN = os.environ.get("WHALE_BIN", os.path.join(ROOT, "build", "bin",
                                                     "whale"))
MLP = os.path.join(ROOT, "examples", "mlp.whl")
GPT = os.path.join(ROOT, "examples", "gpt.whl")

# A small regression model the tests feed themselves: x [B, 4] -> y [B, 1].
REGRESSION = """
import nn
model reg(x: f32[B, 4], y: f32[B, 1]) {
  h = tanh(nn.linear(x, 8))
  p = nn.linear(h, 1)
  loss = mean((p - y) * (p - y))
  return loss
}
train reg {
  data = synthetic(batch = 8, seed = 3)
  optimizer = sgd(lr = 0.05)
  steps = 6
}
"""


def regression_data(rows, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, 4)).astype(np.float32)
    y = (x @ np.array([[0.5], [-1.0], [0.25], [2.0]], np.float32)).astype(
        np.float32)
    return x, y


# ------------------------------------------------------------ compiling


def test_compile_a_path_and_a_source():
    p = whale.compile(MLP, cluster="cpu:2")
    assert p.path == MLP and p.cluster == "cpu:2"
    assert "whale.func" in p.emit("whale") or "func.func" in p.emit("whale")
    s = whale.compile(REGRESSION)
    assert s.source == REGRESSION and s.path is None


def test_script_errors_carry_file_line_and_column():
    with pytest.raises(whale.ScriptError) as e:
        whale.compile("model m(x: f32[2, 2]) {\n  return nosuch(x)\n}\n")
    err = e.value
    assert err.file == "<string>" and err.line == 2 and err.column > 0
    assert err.diagnostics[0].severity == "error"
    assert "nosuch" in str(err) and "<string>:2:" in str(err)
    assert isinstance(err, whale.WhaleError)


def test_a_missing_file_and_a_bad_cluster_are_exceptions():
    with pytest.raises(FileNotFoundError):
        whale.compile("no/such/model.whl")
    p = whale.compile(MLP)
    with pytest.raises(ValueError, match="no cluster"):
        p.plan()
    with pytest.raises(whale.WhaleError):
        p.plan("cpu:zero")


def test_defines_and_config_reach_the_script():
    p = whale.compile(GPT, defines={"LAYERS": 2}, config={"num_micro_batch": 2},
                      cluster="cpu:2")
    assert p.constants["LAYERS"] == "2"
    plan = p.plan()
    assert plan.micro_batches == 2


# ------------------------------------------------------------ plans


def test_plan_gives_stages_devices_shares_and_memory():
    plan = whale.compile(MLP, cluster="cpu:2").plan()
    assert plan.model == "mlp" and plan.devices == 2 and plan.replicas == 2
    assert plan.shares == [32, 32] and sum(plan.shares) == plan.global_batch
    assert len(plan.stages) == 1 and plan.stages[0].devices == [0, 1]
    m = plan.stages[0].memory
    assert m.parameters == 22056 and m.gradients == 22056
    assert m.peak >= m.parameters + m.peak_activations
    assert plan.memory_per_device == [m.peak, m.peak]
    assert plan.compute_seconds > 0
    assert plan.json["version"] == 1


def test_sim_and_search_give_objects():
    p = whale.compile(MLP, cluster="cpu:2")
    sim = p.sim()
    assert sim.iteration_s > 0 and sim.samples_per_s > 0
    assert len(sim.ranks) >= 1 and sim.ranks[0].compute_s > 0
    assert abs(sim.compute_fraction + sim.comm_fraction + sim.bubble_fraction
               + sim.idle_fraction - 1) < 0.05
    told = []
    found = p.search(top=3, progress=lambda d, t, line: told.append((d, t)))
    assert found.best is not None and found.best.outcome == "simulated"
    assert len(found.top) <= 3 and found.best.iteration_s > 0
    assert told and told[-1][0] == told[-1][1]
    times = [c.iteration_s for c in found.top]
    assert times == sorted(times)


def test_a_plan_and_a_run_show_as_the_report_page():
    p = whale.compile(MLP, cluster="cpu:2")
    html = p.plan()._repr_html_()
    assert "<h1>Whale plan</h1>" in html and "taskgraph_stages" in html
    run = whale.train(p, steps=3)
    run.run()
    page = run._repr_html_()
    assert "<h1>Whale run</h1>" in page and "<svg" in page


# ------------------------------------------------------------ training


def whale_run_losses(script, steps, tmp_path, *args):
    metrics = tmp_path / "cli.jsonl"
    subprocess.run([WHALE_BIN, "run", script, "--steps", str(steps),
                    "--metrics", str(metrics), *args], check=True,
                   capture_output=True)
    return [json.loads(l)["loss"] for l in metrics.read_text().splitlines()]


def test_training_gives_whale_runs_losses_bit_for_bit(tmp_path):
    p = whale.compile(MLP)
    run = whale.train(p, steps=5, seed=7)
    steps = [s for s in run]
    assert [s.step for s in steps] == [1, 2, 3, 4, 5]
    assert run.result.ok and run.result.losses == [s.loss for s in steps]
    assert run.losses == whale_run_losses(MLP, 5, tmp_path, "--seed", "7")


def test_training_under_a_plan_gives_whale_runs_losses(tmp_path):
    p = whale.compile(MLP, cluster="cpu:2")
    losses = whale.train(p, steps=4).run().losses
    assert losses == whale_run_losses(MLP, 4, tmp_path, "--cluster", "cpu:2")


def test_a_callback_stops_the_run_and_it_saves(tmp_path):
    ckpt = tmp_path / "stopped.safetensors"
    run = whale.train(whale.compile(MLP), steps=50, save=ckpt,
                      callback=lambda s: s.step < 3)
    result = run.run()
    assert result.stopped and not result.ok and len(result.losses) == 3
    assert run.steps_done == 3 and ckpt.exists()
    saved = whale.load(ckpt)
    now = run.parameters()
    assert set(now) <= set(saved)
    for k in now:
        assert np.array_equal(saved[k].view(np.uint32), now[k].view(np.uint32))


def test_breaking_out_of_the_loop_ends_the_run_at_that_step(tmp_path):
    ckpt = tmp_path / "broke.safetensors"
    run = whale.train(whale.compile(MLP), steps=50, save=ckpt)
    for s in run:
        if s.step == 2:
            break
    assert run.result.stopped and run.steps_done == 2 and ckpt.exists()


def test_a_callback_that_raises_stops_the_run_and_propagates(tmp_path):
    ckpt = tmp_path / "raised.safetensors"

    def callback(step):
        if step.step == 2:
            raise RuntimeError("the dashboard is down")

    run = whale.train(whale.compile(MLP), steps=50, save=ckpt,
                      callback=callback)
    with pytest.raises(RuntimeError, match="dashboard"):
        run.run()
    assert run.result.stopped and run.steps_done == 2 and ckpt.exists()


def test_ctrl_c_stops_after_the_current_step_and_saves(tmp_path):
    ckpt = tmp_path / "interrupted.safetensors"
    p = whale.compile(GPT, defines={"LAYERS": 2})
    run = whale.train(p, steps=1000, save=ckpt)
    seen = []
    with pytest.raises(KeyboardInterrupt):
        for s in run:
            seen.append(s.step)
            if s.step == 1:
                # SIGINT while the next step runs in C++ (the GIL free).
                threading.Timer(0.05, os.kill,
                                (os.getpid(), signal.SIGINT)).start()
    assert run.result.stopped and 1 <= run.steps_done < 1000
    assert run.steps_done in (seen[-1], seen[-1] + 1)
    assert ckpt.exists()
    # The checkpoint holds the steps done: training resumes after them.
    resumed = whale.train(p, steps=run.steps_done + 1, load=ckpt).run()
    assert resumed.first_step == run.steps_done + 1


def test_the_gil_is_free_while_steps_run():
    # Training on one core, a Python thread counting on the other: with the
    # GIL free during steps the thread counts at about its own rate; held
    # through each step, only in the moments between steps.
    p = whale.compile(GPT, defines={"LAYERS": 2})
    count = [0]
    running = [True]

    def spin():
        while running[0]:
            count[0] += 1

    def counted(seconds):
        count[0] = 0
        running[0] = True
        t = threading.Thread(target=spin)
        t.start()
        start = time.perf_counter()
        time.sleep(seconds)
        running[0] = False
        t.join()
        return count[0] / (time.perf_counter() - start)

    alone = counted(0.2)
    run = whale.train(p, steps=6, threads=1)
    it = iter(run)
    next(it)  # compiled and first step done
    count[0] = 0
    running[0] = True
    t = threading.Thread(target=spin)
    t.start()
    start = time.perf_counter()
    try:
        for _ in it:
            pass
    finally:
        running[0] = False
        t.join()
    took = time.perf_counter() - start
    assert took > 0.05
    # Quiet, it kept over half its rate with the GIL free and 0.16 with it held
    # (the release taken out); under ctest beside another test, 0.43 free.
    assert count[0] / took > 0.25 * alone, (count[0] / took, alone)


# ------------------------------------------------------------ data


def test_numpy_arrays_as_the_data_give_the_jobs_losses():
    x, y = regression_data(48)
    p = whale.compile(REGRESSION)
    run = whale.train(p, data=(x, y), steps=6)
    losses = run.run().losses
    job = p.job()
    fed = [job.step(x[8 * i:8 * i + 8], y[8 * i:8 * i + 8]).loss
           for i in range(6)]
    assert losses == fed


def test_every_plan_splits_the_hosts_batch_as_the_scripts():
    x, y = regression_data(64)
    p = whale.compile(REGRESSION)
    one = whale.train(p, data={"x": x, "y": y}, steps=5).run().losses
    two = whale.train(p, data={"x": x, "y": y}, steps=5,
                      cluster="cpu:2").run().losses
    # The gradients' sums run in another order (each replica's rows, then
    # the all-reduce): a few u = 6e-8 a step, carried through 5 SGD steps
    # of a model this small, well inside the contract's 1e-4.
    assert np.allclose(one, two, rtol=1e-5, atol=0)


def test_a_fill_object_writes_into_the_runs_own_buffers():
    x, y = regression_data(48)
    seen = []

    class Source:
        def fill(self, step, batch):
            seen.append({k: v.shape for k, v in batch.items()})
            batch["x"][...] = x[8 * step:8 * step + 8]
            batch["y"][...] = y[8 * step:8 * step + 8]

    p = whale.compile(REGRESSION)
    filled = whale.train(p, data=Source(), steps=3).run().losses
    assert seen[0] == {"x": (8, 4), "y": (8, 1)}
    assert filled == whale.train(p, data=(x, y), steps=3).run().losses


def test_an_iterable_that_ends_ends_the_run():
    x, y = regression_data(16)
    batches = [(x[:8], y[:8]), (x[8:], y[8:])]
    run = whale.train(whale.compile(REGRESSION), data=batches, steps=6)
    result = run.run()
    assert result.stopped and len(result.losses) == 2


def test_a_wrong_shape_is_refused_with_its_name_and_both_shapes():
    p = whale.compile(REGRESSION)
    job = p.job()
    x, y = regression_data(8)
    with pytest.raises(ValueError,
                       match=r"input 'x' has shape \(8, 3\); the model's is "
                             r"\(8, 4\)"):
        job.step(x[:, :3], y)
    run = whale.train(p, data=lambda step: (x, y[:, :0]), steps=2)
    with pytest.raises(ValueError, match=r"input 'y' has shape \(8, 0\)"):
        run.run()
    assert run.result.stopped and run.steps_done == 0


class DlpackOnly:
    """A producer that offers DLPack and nothing else (as a framework's
    tensor does): no buffer protocol, no __array__."""

    def __init__(self, array):
        self._array = array

    def __dlpack__(self, stream=None):
        return self._array.__dlpack__()

    def __dlpack_device__(self):
        return self._array.__dlpack_device__()


def test_dlpack_buffers_and_non_contiguous_inputs_are_taken():
    p = whale.compile(REGRESSION)
    a, b, c = p.job(seed=1), p.job(seed=1), p.job(seed=1)
    x, y = regression_data(8)
    wide = np.zeros((8, 8), np.float32)
    wide[:, ::2] = x
    la = a.step(wide[:, ::2], y.astype(np.float64)).loss
    lb = b.step(DlpackOnly(x), DlpackOnly(y)).loss
    # A plain buffer (the buffer protocol, no NumPy type).
    lc = c.step(memoryview(x), memoryview(y)).loss
    assert la == lb == lc


def test_aligned_arrays_are_read_in_place():
    p = whale.compile(REGRESSION)
    job = p.job()
    x, y = whale.empty((8, 4)), whale.empty((8, 1))
    x[...], y[...] = regression_data(8)
    assert x.ctypes.data % 64 == 0
    job.step(x, y)
    assert job.copied_input_bytes == 0


# ------------------------------------------------------------ parameters


def test_parameters_round_trip_through_numpy_bit_for_bit(tmp_path):
    p = whale.compile(REGRESSION)
    job = p.job()
    rng = np.random.default_rng(5)
    written = {}
    for spec in job.parameter_specs:
        v = rng.standard_normal(spec.shape).astype(np.float32)
        v.flat[0] = np.float32(1e-40)  # a subnormal survives too
        job.parameters[spec.name] = v
        written[spec.name] = v
    for name, v in written.items():
        got = job.parameters[name]
        assert got.dtype == np.float32 and got.shape == v.shape
        assert np.array_equal(got.view(np.uint32), v.view(np.uint32))
    job.save(tmp_path / "job.safetensors")
    on_disk = whale.load(tmp_path / "job.safetensors")
    for name, v in written.items():
        assert np.array_equal(on_disk[name].view(np.uint32),
                              v.view(np.uint32))
    with pytest.raises(ValueError, match="has shape"):
        job.parameters[job.parameter_specs[0].name] = np.zeros((1, 1))
    with pytest.raises(KeyError):
        job.parameters["no.such"]


def test_a_saved_job_loads_into_another(tmp_path):
    p = whale.compile(REGRESSION)
    x, y = regression_data(8)
    a = p.job()
    a.step(x, y)
    a.save(tmp_path / "job.safetensors")
    b = p.job()
    b.load(tmp_path / "job.safetensors")
    assert b.steps_done == 1
    assert a.step(x, y).loss == b.step(x, y).loss


def test_a_run_saves_between_steps_and_after(tmp_path):
    p = whale.compile(MLP, cluster="cpu:2")
    run = whale.train(p, steps=3)
    it = iter(run)
    next(it)
    path = tmp_path / "run.safetensors"
    run.save(path)
    mid = whale.load(path)
    for k, v in run.parameters().items():
        assert np.array_equal(mid[k].view(np.uint32), v.view(np.uint32))
    for _ in it:
        pass
    run.save(path)
    end = whale.load(path)
    assert any(not np.array_equal(end[k], mid[k]) for k in end)


def test_parameters_written_into_a_planned_run_reach_every_rank():
    p = whale.compile(MLP, cluster="cpu:2")
    run = whale.train(p, steps=4)
    it = iter(run)
    next(it)
    rng = np.random.default_rng(9)
    new = {k: rng.standard_normal(v.shape).astype(np.float32)
           for k, v in run.parameters().items()}
    run.set_parameters(new)
    back = run.parameters()
    for k, v in new.items():
        assert np.array_equal(back[k].view(np.uint32), v.view(np.uint32))
    for _ in it:
        pass
    # Both ranks step from them: a planned run fed known batches, its
    # parameters set after step 1, takes step 2 with the loss one device
    # gives those values on that batch.
    x, y = regression_data(16)
    r = whale.compile(REGRESSION)
    planned = whale.train(r, data=(x, y), steps=2, cluster="cpu:2")
    steps = iter(planned)
    next(steps)
    values = {k: rng.standard_normal(v.shape).astype(np.float32)
              for k, v in planned.parameters().items()}
    planned.set_parameters(values)
    second = next(steps).loss
    job = r.job()
    for k, v in values.items():
        job.parameters[k] = v
    alone = job.step(x[8:], y[8:]).loss
    # Each row's loss is the same arithmetic on both; only the mean's sum
    # differs (4 + 4 rows, then the replicas' pair, against 8 in a row):
    # a few roundings of fp32's u = 6e-8 on a sum of positive terms.
    assert abs(second - alone) <= 1e-6 * abs(alone)
    with pytest.raises(ValueError, match="has shape"):
        run.set_parameters({next(iter(new)): np.zeros(3)})


def test_load_reads_what_safetensors_reads_and_the_folder_a_save_made(
        tmp_path):
    # A save path without .safetensors is a folder holding
    # checkpoint.safetensors; whale.load takes either form.
    run = whale.train(whale.compile(MLP), steps=2, save=tmp_path / "ckpt")
    run.run()
    ours = whale.load(tmp_path / "ckpt")
    now = run.parameters()
    for k, v in now.items():
        assert np.array_equal(ours[k].view(np.uint32), v.view(np.uint32))
    # The peer that defines the format reads the same tensors.
    st = pytest.importorskip("safetensors.numpy")
    theirs = st.load_file(str(tmp_path / "ckpt" / "checkpoint.safetensors"))
    assert set(theirs) == set(ours)
    for k, v in theirs.items():
        assert ours[k].dtype == v.dtype and np.array_equal(ours[k], v)
    with pytest.raises(whale.WhaleError):
        whale.load(tmp_path / "nothing-here.safetensors")
