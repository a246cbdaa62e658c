"""Whale from Python: compile ``.whl`` models, plan, simulate and search
their parallel plans, and train them, with NumPy arrays in and out.

    import whale
    program = whale.compile("examples/gpt.whl", cluster="cpu:2",
                            defines={"LAYERS": 2})
    print(program.plan().stages)
    run = whale.train(program, steps=20)
    for step in run:
        print(step.step, step.loss)

docs/python.md is the guide; every object here is a thin layer over the
C++ embedding API (whale/Train.h, whale/Job.h, whale/Plan.h).
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from typing import (Any, Callable, Dict, Iterable, Iterator, List, Mapping,
                    NamedTuple, Optional, Sequence, Tuple, Union)

import numpy as np

from . import _whale

__all__ = [
    "WhaleError", "ScriptError", "Diagnostic", "compile", "Program", "Plan",
    "StagePlan", "Memory", "Simulation", "RankTime", "SearchResult",
    "Candidate", "train", "Run", "Step", "Result", "Job", "TensorSpec",
    "load", "empty",
]

WhaleError = _whale.WhaleError
"""What Whale reports when planning, compiling, a step or a file fails."""
WhaleError.__module__ = "whale"

_STDLIB = os.path.join(os.path.dirname(__file__), "stdlib")


@dataclass(frozen=True)
class Diagnostic:
    """One problem of a script, where it is."""
    severity: str  # "error", "warning" or "note"
    file: str
    line: int
    column: int
    message: str
    notes: Tuple["Diagnostic", ...] = ()

    @staticmethod
    def _of(d: Mapping[str, Any]) -> "Diagnostic":
        return Diagnostic(d["severity"], d["file"], d["line"], d["column"],
                          d["message"],
                          tuple(Diagnostic._of(n) for n in d["notes"]))

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}:{self.column}: " if self.file else ""
        return f"{where}{self.severity}: {self.message}"


class ScriptError(WhaleError):
    """The script has errors. ``diagnostics`` lists them; ``file``,
    ``line`` and ``column`` are the first error's; ``str()`` is what the
    command line prints (each with its source line and a caret)."""

    def __init__(self, rendered: str, diagnostics: Sequence[Diagnostic]):
        super().__init__(rendered.rstrip("\n"))
        self.diagnostics = list(diagnostics)
        first = next((d for d in self.diagnostics if d.severity == "error"),
                     self.diagnostics[0] if self.diagnostics else None)
        self.file = first.file if first else ""
        self.line = first.line if first else 0
        self.column = first.column if first else 0


def _define_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _config_value(key: str, value: Any) -> Union[int, bool, str]:
    if isinstance(value, (bool, int, str)):
        return value
    raise TypeError(f"config '{key}' must be an int, a bool or a str, "
                    f"not {type(value).__name__}")


# ----------------------------------------------------------------- programs


@dataclass
class Memory:
    """Bytes one rank of a stage holds, by kind (`whale plan`'s figures)."""
    parameters: int
    gradients: int
    optimizer_state: int
    gathered_parameters: int
    peak_activations: int
    peak: int


@dataclass
class StagePlan:
    """One pipeline stage: its devices, TaskGraphs, memory and traffic."""
    stage: int
    devices: List[int]
    taskgraphs: List[str]
    memory: Memory
    comm_bytes_per_step: Dict[str, int]
    schedule: List[str]


@dataclass
class Plan:
    """A model planned over devices (``whale plan --json``)."""
    model: str
    devices: int
    stages: List[StagePlan]
    replicas: int
    global_batch: int
    micro_batch: int
    micro_batches: int
    schedule: str
    #: samples of the global batch each device computes, by device
    shares: List[int]
    #: the balancer's predicted compute time of a step (the slowest
    #: device's; ``Program.sim()`` predicts the whole iteration)
    compute_seconds: float
    #: each device's peak bytes, by device
    memory_per_device: List[int]
    json: Dict[str, Any] = field(repr=False)

    @staticmethod
    def _of(d: Dict[str, Any]) -> "Plan":
        stages = []
        peaks = [0] * d["devices"]
        for s in d["taskgraph_stages"]:
            m = s["memory_bytes"]
            memory = Memory(m["parameters"], m["gradients"],
                            m["optimizer_state"], m["gathered_parameters"],
                            m["peak_activations"], m["peak"])
            stages.append(StagePlan(
                s["stage"], list(s["devices"]), list(s["taskgraphs"]), memory,
                {k: v for k, v in s["comm_bytes_per_step"].items()},
                list(s["schedule"])))
            for dev in s["devices"]:
                peaks[dev] = max(peaks[dev], memory.peak)
        balance = d.get("balance", {})
        shares = [0] * d["devices"]
        for dev in balance.get("devices", []):
            shares[dev["device"]] += dev["samples"]
        return Plan(d["model"], d["devices"], stages, d["replicas"],
                    d["global_batch"], d["micro_batch"], d["micro_batches"],
                    d["schedule"], shares,
                    float(balance.get("step_compute_seconds", 0.0)), peaks, d)

    def _repr_html_(self) -> str:
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "plan.json")
            with open(path, "w") as f:
                json.dump(self.json, f, indent=1)
            return _whale.report_html("", path, "")


@dataclass
class RankTime:
    """One rank's predicted time in an iteration."""
    device: int
    stage: int
    replica: int
    compute_s: float
    comm_s: float
    idle_s: float
    peak_memory_bytes: int


@dataclass
class Simulation:
    """A plan's predicted iteration (``whale sim --json``)."""
    model: str
    devices: int
    iteration_s: float
    samples_per_s: float
    tokens_per_s: float
    mfu: Optional[float]
    compute_fraction: float
    comm_fraction: float
    bubble_fraction: float
    idle_fraction: float
    ranks: List[RankTime]
    seconds_by_kind: Dict[str, float]
    json: Dict[str, Any] = field(repr=False)

    @staticmethod
    def _of(d: Dict[str, Any]) -> "Simulation":
        ranks = [RankTime(r["device"], r["stage"], r["replica"], r["compute_s"],
                          r["comm_s"], r["idle_s"], r["peak_memory_bytes"])
                 for r in d["ranks"]]
        return Simulation(d["model"], d["devices"], d["iteration_s"],
                          d["samples_per_s"], d["tokens_per_s"], d["mfu"],
                          d["compute_fraction"], d["comm_fraction"],
                          d["bubble_fraction"], d["idle_fraction"], ranks,
                          dict(d["seconds_by_kind"]), d)


@dataclass
class Candidate:
    """One plan a search considered."""
    label: str
    outcome: str  # "simulated", "over_memory", "dominated", "bound", ...
    config: Dict[str, Any]
    iteration_s: Optional[float]
    samples_per_s: Optional[float]
    peak_memory: Optional[int]
    json: Dict[str, Any] = field(repr=False)

    @staticmethod
    def _of(d: Dict[str, Any]) -> "Candidate":
        return Candidate(d.get("label", ""), d.get("outcome", ""),
                         dict(d.get("config", {})), d.get("iteration_s"),
                         d.get("samples_per_s"), d.get("peak_memory"), d)


@dataclass
class SearchResult:
    """The plans ``whale search`` tried: ``top`` fastest first."""
    model: str
    devices: int
    global_batch: int
    top: List[Candidate]
    others: List[Candidate]
    counts: Dict[str, int]
    seconds: float
    json: Dict[str, Any] = field(repr=False)

    @property
    def best(self) -> Optional[Candidate]:
        return self.top[0] if self.top else None

    @staticmethod
    def _of(d: Dict[str, Any]) -> "SearchResult":
        return SearchResult(d["model"], d["devices"], d["global_batch"],
                            [Candidate._of(c) for c in d["top"]],
                            [Candidate._of(c) for c in d["others"]],
                            dict(d["counts"]), d["search_s"], d)


class Program:
    """A loaded, checked script (``whale.compile``)."""

    def __init__(self, native: "_whale.Interpreter", *, path: Optional[str],
                 source: Optional[str], cluster: Optional[str],
                 options: Dict[str, Any]):
        self._native = native
        self.path = path
        self.source = source
        self.cluster = cluster
        self._options = options

    def _cluster(self, cluster: Optional[str]) -> str:
        c = cluster or self.cluster
        if not c:
            raise ValueError("no cluster: pass cluster= (such as 'cpu:4') "
                             "here or to whale.compile")
        return c

    @property
    def diagnostics(self) -> List[Diagnostic]:
        """Warnings of the load (a program with errors is never made)."""
        return [Diagnostic._of(d) for d in self._native.diagnostics()]

    @property
    def constants(self) -> Dict[str, str]:
        """The script's top-level constants, as the language writes them."""
        return dict(self._native.constants())

    def emit(self, stage: str = "whale") -> str:
        """The program at a stage: ast, whale, grad, train or runtime."""
        return self._native.emit(stage)

    def plan(self, cluster: Optional[str] = None) -> Plan:
        """The model planned over ``cluster`` (default: compile's)."""
        return Plan._of(json.loads(self._native.plan_json(
            self._cluster(cluster))))

    def sim(self, cluster: Optional[str] = None,
            profile: Optional[str] = None) -> Simulation:
        """The plan's predicted iteration, from the device model or a
        profile database (``whale profile``)."""
        return Simulation._of(json.loads(self._native.sim_json(
            self._cluster(cluster), profile or "")))

    def search(self, cluster: Optional[str] = None, *, top: int = 5,
               jobs: int = 0, profile: Optional[str] = None,
               progress: Optional[Callable[[int, int, str], None]] = None
               ) -> SearchResult:
        """The plans searched for this script over ``cluster``.
        ``progress(done, total, line)`` is told each candidate."""
        o = self._options
        path = self.path
        tmp = None
        if path is None:
            # The search loads the script anew for every candidate.
            tmp = tempfile.NamedTemporaryFile("w", suffix=".whl", delete=False)
            tmp.write(self.source or "")
            tmp.close()
            path = tmp.name
        try:
            text = _whale.search_json(path, o["search_path"], o["dims"],
                                      o["defines"], o["configs"],
                                      self._cluster(cluster), profile or "",
                                      top, jobs, progress)
        finally:
            if tmp is not None:
                os.unlink(tmp.name)
        return SearchResult._of(json.loads(text))

    def job(self, *, model: Optional[str] = None, batch: Optional[int] = None,
            steps: Optional[int] = None, seed: Optional[int] = None,
            threads: int = 0) -> "Job":
        """The model's train step on this CPU, fed by you a batch at a
        time (``Job.step``)."""
        return Job(_whale.Job(self._native, model or "", batch, steps, seed,
                              threads), self)

    def train(self, data: Any = None, steps: Optional[int] = None,
              **options: Any) -> "Run":
        """``whale.train(self, data, steps, ...)``."""
        return train(self, data, steps, **options)


def compile(script: Union[str, os.PathLike], *, cluster: Optional[str] = None,
            defines: Optional[Mapping[str, Any]] = None,
            config: Optional[Mapping[str, Any]] = None,
            dims: Optional[Mapping[str, int]] = None,
            batch: Optional[int] = None,
            search_path: Sequence[Union[str, os.PathLike]] = ()) -> Program:
    """Loads and checks a script: a path (a ``str`` naming a file or any
    ``os.PathLike``) or the source text itself. ``defines`` replace
    top-level constants (``--define``), ``config`` sets config keys
    (``--config``), ``dims`` binds symbolic input dimensions (``--dim``),
    ``cluster`` is the devices plan/sim/search/train use by default.
    Raises ScriptError with each diagnostic's file, line and column."""
    options = {
        "search_path": [os.fspath(p) for p in search_path] +
                       ([_STDLIB] if os.path.isdir(_STDLIB) else []),
        "dims": {str(k): int(v) for k, v in (dims or {}).items()},
        "defines": {str(k): _define_text(v)
                    for k, v in (defines or {}).items()},
        "configs": {str(k): _config_value(str(k), v)
                    for k, v in (config or {}).items()},
    }
    native = _whale.Interpreter(options["search_path"], options["dims"],
                                options["defines"], options["configs"], batch)
    path: Optional[str] = None
    source: Optional[str] = None
    if isinstance(script, os.PathLike) or (
            isinstance(script, str) and "\n" not in script and
            (os.path.exists(script) or script.endswith(".whl"))):
        path = os.fspath(script)
        if not os.path.exists(path):
            raise FileNotFoundError(f"no script at '{path}'")
        ok = native.load_file(path)
    elif isinstance(script, str):
        source = script
        ok = native.load_string(script, "<string>")
    else:
        raise TypeError("compile takes a path or the source text, not "
                        f"{type(script).__name__}")
    if not ok:
        raise ScriptError(native.render_diagnostics(),
                          [Diagnostic._of(d) for d in native.diagnostics()])
    return Program(native, path=path, source=source, cluster=cluster,
                   options=options)


# ----------------------------------------------------------------- training


class Step(NamedTuple):
    """What one training step did."""
    step: int  # 1-based, counting a loaded checkpoint's steps
    steps: int  # the run's last step
    loss: float
    samples_per_s: float
    elapsed_s: float  # since the run started
    lr: float
    eval_loss: float  # the held-out loss after this step, else NaN


@dataclass
class Result:
    """How a run ended."""
    ok: bool
    stopped: bool  # ended early by stop(), Ctrl-C, a callback or its data
    error: str
    first_step: int
    losses: List[float]
    eval_losses: List[Tuple[int, float]]
    #: under a plan: each device's peak bytes and samples a step
    peak_memory: List[int]
    local_batches: List[int]
    comm_bytes: List[int]


def _as_array(x: Any) -> np.ndarray:
    if isinstance(x, np.ndarray):
        return x
    if hasattr(x, "__dlpack__") and not hasattr(x, "__array_interface__") \
            and not hasattr(x, "__array__"):
        return np.from_dlpack(x)
    return np.asarray(x)


def _copy_into(batch: Dict[str, np.ndarray], values: Any) -> None:
    """One step's arrays (by input order or by name) into the run's
    buffers, checked: a wrong shape is refused naming the input."""
    names = list(batch)
    if isinstance(values, Mapping):
        missing = [n for n in names if n not in values]
        if missing:
            raise KeyError(f"the batch has no input '{missing[0]}' "
                           f"(the model's inputs: {', '.join(names)})")
        items = [(n, values[n]) for n in names]
    else:
        if isinstance(values, np.ndarray) or not isinstance(values, Sequence):
            values = (values,)
        if len(values) != len(names):
            raise ValueError(f"the batch has {len(values)} arrays; the model "
                             f"takes {len(names)} ({', '.join(names)})")
        items = list(zip(names, values))
    for name, value in items:
        a = _as_array(value)
        view = batch[name]
        if a.shape != view.shape:
            raise ValueError(f"input '{name}' has shape {tuple(a.shape)}; "
                             f"the model's is {tuple(view.shape)} (the "
                             f"global batch)")
        np.copyto(view, a, casting="same_kind")


def _data_fill(data: Any) -> Optional[Callable[[int, Dict[str, np.ndarray]],
                                               Any]]:
    """The run's fill(step, batch) for each kind of ``data``."""
    if data is None:
        return None
    if hasattr(data, "fill") and callable(data.fill):
        # Writes straight into the run's buffers: no copy.
        return lambda step, batch: data.fill(step, batch)
    if callable(data):
        return lambda step, batch: _copy_into(batch, data(step))
    if isinstance(data, (tuple, list, dict)) and data and all(
            isinstance(a, np.ndarray) or hasattr(a, "__array__") or
            hasattr(a, "__dlpack__")
            for a in (data.values() if isinstance(data, dict) else data)):
        # Whole arrays: consecutive rows, a global batch a step, in order,
        # starting over at the end.
        arrays = ({k: _as_array(v) for k, v in data.items()}
                  if isinstance(data, dict) else [_as_array(a) for a in data])
        first = next(iter(arrays.values() if isinstance(arrays, dict)
                          else arrays))
        n = first.shape[0]

        def rows(step: int, batch: Dict[str, np.ndarray]) -> None:
            b = next(iter(batch.values())).shape[0]
            if n < b:
                raise ValueError(f"the data has {n} rows, fewer than the "
                                 f"global batch of {b}")
            start = (step * b) % (n - n % b if n % b else n)
            take = slice(start, start + b)
            if isinstance(arrays, dict):
                _copy_into(batch, {k: v[take] for k, v in arrays.items()})
            else:
                _copy_into(batch, [a[take] for a in arrays])
        return rows
    if isinstance(data, Iterable):
        it = iter(data)
        return lambda step, batch: _copy_into(batch, next(it))
    raise TypeError("data must be None (the script's), arrays, a callable "
                    "step -> arrays, an iterable of batches or an object "
                    f"with fill(step, batch), not {type(data).__name__}")


class Run:
    """A training run, stepped as you iterate it::

        run = whale.train(program, steps=100, save="ckpt")
        for step in run:          # each Step as it finishes
            if step.loss < 0.5:
                run.stop()        # ends after this step, saving to ckpt

    Nothing steps until you iterate it or call ``run()``. Ctrl-C stops
    after the current step and saves where ``save=`` was given, as
    ``whale run`` does on SIGINT; then KeyboardInterrupt propagates. An
    exception in a callback or in your data ends the run cleanly (saving
    the same way) and propagates. While a step runs, the GIL is free.
    """

    def __init__(self, program: Program, options: Dict[str, Any],
                 fill: Any, callback: Optional[Callable[[Step], Any]]):
        self.program = program
        #: the metrics file `metrics=` named (JSON lines, as `whale run
        #: --metrics` writes), else None: the steps are in `steps`
        self.metrics_path: Optional[str] = options.get("metrics")
        self._native = _whale.Training(program._native, options, fill)
        self._callback = callback
        self._result: Optional[Result] = None
        self._parameters: Optional[Dict[str, np.ndarray]] = None
        self._iterating = False
        self.steps: List[Step] = []

    # The loop.
    def __iter__(self) -> Iterator[Step]:
        if self._result is not None:
            return
        if self._iterating:
            raise RuntimeError("the run is already being iterated")
        self._iterating = True
        try:
            next_step = self._native.next
            make = Step._make
            append = self.steps.append
            callback = self._callback
            while True:
                t = next_step()
                if t is None:
                    break
                step = make(t)
                append(step)
                if callback is not None and callback(step) is False:
                    self.stop()
                yield step
        finally:
            # The loop's end, a break, or an exception anywhere (Ctrl-C in
            # the loop's body included): the run ends at this step
            # boundary, saving where asked.
            self._iterating = False
            self._end()

    def run(self) -> Result:
        """Steps to the end (or a stop) and gives the result; raises
        WhaleError where the run failed."""
        for _ in self:
            pass
        return self.result

    def stop(self) -> None:
        """Ends the run before its next step (any thread)."""
        self._native.stop()

    def _end(self) -> None:
        if self._result is not None:
            return
        d = self._native.finish()
        self._result = Result(d["ok"], d["stopped"], d["error"],
                              d["first_step"], list(d["losses"]),
                              [tuple(e) for e in d["eval_losses"]],
                              list(d["peak_memory"]),
                              list(d["local_batches"]),
                              list(d["comm_bytes"]))
        if not d["ok"] and not d["stopped"]:
            raise WhaleError(d["error"])

    @property
    def result(self) -> Result:
        """How the run ended (runs it to the end first if it has not)."""
        if self._result is None:
            self.run()
        assert self._result is not None
        return self._result

    @property
    def losses(self) -> List[float]:
        return [s.loss for s in self.steps]

    @property
    def steps_done(self) -> int:
        """Steps done, counting a loaded checkpoint's."""
        return self._native.steps_done()

    def save(self, path: Union[str, os.PathLike]) -> None:
        """The state now (parameters, optimizer state, step) into a
        checkpoint, whole, whatever the plan; between steps or after."""
        self._native.save(os.fspath(path))

    def parameters(self) -> Dict[str, np.ndarray]:
        """Every parameter's values now, by name (copies)."""
        return self._native.parameters()

    def set_parameters(self, values: Mapping[str, Any]) -> None:
        """Writes parameters by name, between steps or after the run,
        into every rank that holds part of them, bit for bit; each array
        must have the parameter's shape."""
        shapes = {n: tuple(s) for n, _, s in self._native.parameter_info()}
        pairs = []
        for name, value in values.items():
            if name not in shapes:
                raise KeyError(f"no parameter '{name}'")
            a = np.ascontiguousarray(_as_array(value), dtype=np.float32)
            if a.shape != shapes[name]:
                raise ValueError(f"parameter '{name}' has shape "
                                 f"{shapes[name]}, not {a.shape}")
            pairs.append((name, a))
        self._native.write_parameters(pairs)

    def _repr_html_(self) -> str:
        if not self.steps:
            return "<p>Whale run: no step yet</p>"
        if self.metrics_path:
            return _whale.report_html(self.metrics_path, "", "")
        with tempfile.TemporaryDirectory(prefix="whale-run-") as tmp:
            path = os.path.join(tmp, "metrics.jsonl")
            with open(path, "w") as f:
                for s in self.steps:
                    row = {"step": s.step, "loss": s.loss,
                           "samples_per_s": s.samples_per_s,
                           "time_s": s.elapsed_s, "lr": s.lr}
                    if s.eval_loss == s.eval_loss:
                        row["val_loss"] = s.eval_loss
                    f.write(json.dumps(row) + "\n")
            return _whale.report_html(path, "", "")


def train(program: Program, data: Any = None, steps: Optional[int] = None, *,
          cluster: Optional[str] = None, seed: Optional[int] = None,
          save: Optional[Union[str, os.PathLike]] = None,
          load: Optional[Union[str, os.PathLike]] = None,
          metrics: Optional[Union[str, os.PathLike]] = None,
          trace: Optional[Union[str, os.PathLike]] = None,
          callback: Optional[Callable[[Step], Any]] = None,
          model: Optional[str] = None, threads: int = 0,
          even: bool = False, fuse: bool = True, overlap: bool = True,
          save_ranks: bool = False) -> Run:
    """A run of the program's train block, ready to step (``Run``).

    ``data``: None, the train block's own data; or, a global batch a step,
    whole NumPy arrays (in the model's input order, or a dict by name)
    read in order, a callable ``step -> arrays``, an iterable of batches
    (its end ends the run), or an object whose ``fill(step, batch)``
    writes into ``batch`` (a dict of the run's own buffers: no copy).
    Every plan splits the global batch as it splits the script's data.

    ``cluster``: the devices (default: compile's; none: one CPU device).
    ``callback(step)`` returning False (or raising) ends the run.
    ``save``: a checkpoint written after the last step (and on a stop).
    """
    options: Dict[str, Any] = {
        "model": model, "cluster": cluster or program.cluster, "seed": seed,
        "steps": steps, "save": os.fspath(save) if save else None,
        "load": os.fspath(load) if load else None,
        "metrics": os.fspath(metrics) if metrics else None,
        "trace": os.fspath(trace) if trace else None, "threads": threads,
        "even": even, "fuse": fuse, "overlap": overlap,
        "save_ranks": save_ranks,
    }
    return Run(program, options, _data_fill(data), callback)


# ----------------------------------------------------------------- jobs


@dataclass(frozen=True)
class TensorSpec:
    """A model input or parameter: name, "f32" or "i32", and shape."""
    name: str
    dtype: str
    shape: Tuple[int, ...]

    @property
    def numpy_dtype(self) -> np.dtype:
        return np.dtype(np.float32 if self.dtype == "f32" else np.int32)


class _Parameters(Mapping[str, np.ndarray]):
    """A job's parameters by name: reading gives a copy, assigning writes
    the job's (same shape, float32; bit for bit)."""

    def __init__(self, job: "Job"):
        self._job = job

    def __getitem__(self, name: str) -> np.ndarray:
        return self._job._native.read_parameter(name)

    def __setitem__(self, name: str, value: Any) -> None:
        a = np.ascontiguousarray(_as_array(value), dtype=np.float32)
        self._job._native.write_parameter(name, a)

    def __iter__(self) -> Iterator[str]:
        return iter(p.name for p in self._job.parameter_specs)

    def __len__(self) -> int:
        return len(self._job.parameter_specs)


class Job:
    """The model's train step on one CPU device, fed by the host::

        job = program.job()
        for x, y in batches:
            step = job.step(x, y)
        w = job.parameters["fc1.weight"]

    A float32 (int32) C-contiguous array aligned to 64 bytes is read in
    place (``whale.empty`` makes such arrays); any other is copied first
    (``copied_input_bytes`` counts it)."""

    def __init__(self, native: "_whale.Job", program: Program):
        self._native = native
        self.program = program
        self.inputs = [TensorSpec(n, d, tuple(s))
                       for n, d, s in native.inputs()]
        self.parameter_specs = [TensorSpec(n, d, tuple(s))
                                for n, d, s in native.parameters()]
        self.parameters = _Parameters(self)

    @property
    def model(self) -> str:
        return self._native.model()

    def step(self, *arrays: Any, **named: Any) -> Step:
        """One training step on one batch: the inputs in order, or by
        name. A wrong shape is refused naming the input and both shapes;
        another element type is converted (a copy)."""
        if named:
            if arrays:
                raise TypeError("give the inputs in order or by name, "
                                "not both")
            missing = [i.name for i in self.inputs if i.name not in named]
            if missing:
                raise KeyError(f"no input '{missing[0]}' (the model's "
                               f"inputs: "
                               f"{', '.join(i.name for i in self.inputs)})")
            arrays = tuple(named[i.name] for i in self.inputs)
        if len(arrays) != len(self.inputs):
            raise ValueError(f"the model takes {len(self.inputs)} inputs "
                             f"({', '.join(i.name for i in self.inputs)}), "
                             f"not {len(arrays)}")
        prepared = []
        for spec, value in zip(self.inputs, arrays):
            a = _as_array(value)
            if tuple(a.shape) != spec.shape:
                raise ValueError(f"input '{spec.name}' has shape "
                                 f"{tuple(a.shape)}; the model's is "
                                 f"{spec.shape}")
            prepared.append(np.ascontiguousarray(a, dtype=spec.numpy_dtype))
        return Step._make(self._native.step(prepared))

    @property
    def steps_done(self) -> int:
        return self._native.steps_done()

    @property
    def copied_input_bytes(self) -> int:
        return self._native.copied_input_bytes()

    def save(self, path: Union[str, os.PathLike]) -> None:
        """Parameters, optimizer state and step into a checkpoint."""
        self._native.save(os.fspath(path))

    def load(self, path: Union[str, os.PathLike]) -> None:
        """Resumes from a checkpoint of this model (any plan's file)."""
        self._native.load(os.fspath(path))


# ----------------------------------------------------------------- files


def load(path: Union[str, os.PathLike]) -> Dict[str, np.ndarray]:
    """A checkpoint's tensors by name, as NumPy arrays (float32, int32 or
    int64): a file, or the folder a save made; any safetensors file. Read
    and checked as loading checks it (layout and checksums). To resume
    training from it: ``whale.train(program, load=path)`` or
    ``job.load(path)``."""
    return _whale.read_tensors(os.fspath(path))


def empty(shape: Union[int, Sequence[int]],
          dtype: Any = np.float32) -> np.ndarray:
    """An uninitialized array aligned to 64 bytes, which ``Job.step``
    reads in place."""
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    dt = np.dtype(dtype)
    n = int(np.prod(shape)) * dt.itemsize
    raw = np.empty(n + 64, dtype=np.uint8)
    offset = (-raw.ctypes.data) % 64
    return raw[offset:offset + n].view(dt).reshape(shape)
