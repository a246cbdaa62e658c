//===- module.cpp - whale's Python binding (the _whale extension) ---------===//
//
// A thin layer over the C++ embedding API (whale/Interpreter.h, Job.h,
// Train.h, Plan.h); python/whale/__init__.py makes the objects Python
// users see out of it. Why pybind11: Debian ships it (pybind11-dev) and
// PyPI too, it is header-only, and its buffer protocol and GIL handling
// are what this layer needs; DLPack inputs reach us through NumPy
// (numpy.from_dlpack) in the Python layer, without a copy.
//
// The GIL is released wherever Whale works (loading, compiling, planning,
// every step) and taken back only to call Python (the host's data, a
// search's progress). A Python exception raised there ends the run
// cleanly and is raised again from the call that was stepping it.
//
//===----------------------------------------------------------------------===//

#include "whale/Interpreter.h"
#include "whale/Job.h"
#include "whale/Plan.h"
#include "whale/Train.h"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>

namespace py = pybind11;

namespace {

/// Whale's own failures (not the script's: those come back as diagnostics).
struct WhaleError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// An interpreter and the lock its calls take: Python threads may share a
/// program, and the GIL is released while Whale works.
struct PyInterpreter {
  explicit PyInterpreter(const whale::InterpreterOptions &options)
      : interp(options) {}
  whale::Interpreter interp;
  std::mutex lock;
};

/// `f(interp)` with the GIL released and the interpreter's lock held (in
/// that order: a thread waiting for the lock never holds the GIL).
template <class F> auto locked(PyInterpreter &w, F &&f) {
  py::gil_scoped_release release;
  std::lock_guard<std::mutex> guard(w.lock);
  return f(w.interp);
}

whale::ConfigValue configValue(const py::handle &v, const std::string &key) {
  if (py::isinstance<py::bool_>(v))
    return v.cast<bool>();
  if (py::isinstance<py::int_>(v))
    return v.cast<int64_t>();
  if (py::isinstance<py::str>(v))
    return v.cast<std::string>();
  throw py::type_error("config '" + key +
                       "' must be an int, a bool or a str, not " +
                       std::string(py::str(v.get_type().attr("__name__"))));
}

whale::InterpreterOptions
interpreterOptions(const std::vector<std::string> &searchPath,
                   const std::map<std::string, int64_t> &dims,
                   const std::map<std::string, std::string> &defines,
                   const py::dict &configs, std::optional<int64_t> batch) {
  whale::InterpreterOptions o;
  o.searchPath = searchPath;
  o.dims = dims;
  o.defines = defines;
  for (auto [k, v] : configs) {
    std::string key = py::str(k);
    o.configs[key] = configValue(v, key);
  }
  o.batch = batch;
  return o;
}

py::dict diagnosticDict(const whale::Diagnostic &d) {
  py::dict out;
  out["severity"] = d.severity == whale::Diagnostic::Severity::Error ? "error"
                    : d.severity == whale::Diagnostic::Severity::Warning
                        ? "warning"
                        : "note";
  out["file"] = d.file;
  out["line"] = d.line;
  out["column"] = d.column;
  out["message"] = d.message;
  py::list notes;
  for (const whale::Diagnostic &n : d.notes)
    notes.append(diagnosticDict(n));
  out["notes"] = notes;
  return out;
}

/// A step's report as a tuple in whale.Step's field order (a tuple, not a
/// dict: the Python loop's cost a step is what docs/performance.md
/// measures).
py::tuple stepTuple(const whale::StepReport &r) {
  return py::make_tuple(r.step, r.steps, r.loss, r.samplesPerSecond,
                        r.elapsedSeconds, r.learningRate, r.evalLoss);
}

py::array_t<float> parameterArray(const std::vector<float> &values,
                                  const std::vector<int64_t> &shape) {
  std::vector<py::ssize_t> dims(shape.begin(), shape.end());
  py::array_t<float> a(dims);
  std::copy(values.begin(), values.end(), a.mutable_data());
  return a;
}

/// A new array of `dims` holding a checkpoint tensor's bytes.
template <class T>
py::object filledArray(const std::vector<py::ssize_t> &dims,
                       const whale::StoredArray &stored) {
  py::array_t<T> a(dims);
  if (static_cast<size_t>(a.size()) * sizeof(T) != stored.bytes.size())
    throw WhaleError("tensor '" + stored.info.name + "' holds " +
                     std::to_string(stored.bytes.size()) +
                     " bytes, not its shape's");
  std::memcpy(a.mutable_data(), stored.bytes.data(), stored.bytes.size());
  return std::move(a);
}

/// The dtype character NumPy's buffer format gives an element type.
bool formatIs(const py::buffer_info &b, const std::string &dtype) {
  if (b.itemsize != 4)
    return false;
  if (dtype == "f32")
    return b.format == "f";
  return b.format == "i" || b.format == "l"; // 4 bytes: checked above
}

bool cContiguous(const py::buffer_info &b) {
  py::ssize_t expect = b.itemsize;
  for (py::ssize_t d = b.ndim - 1; d >= 0; --d) {
    if (b.shape[d] != 1 && b.strides[d] != expect)
      return false;
    expect *= b.shape[d];
  }
  return true;
}

std::string shapeText(const std::vector<int64_t> &s) {
  std::string t = "(";
  for (size_t i = 0; i < s.size(); ++i)
    t += (i ? ", " : "") + std::to_string(s[i]);
  return t + (s.size() == 1 ? ",)" : ")");
}

/// A training run stepped from Python.
class PyTraining {
public:
  PyTraining(PyInterpreter &interp, whale::TrainOptions options,
             py::object fill)
      : fill(std::move(fill)) {
    if (!this->fill.is_none())
      options.data = [this](int64_t step,
                            std::vector<whale::HostBatchBuffer> &buffers) {
        return callFill(step, buffers);
      };
    // Planning and compiling read the interpreter; the steps do not.
    run = locked(interp, [&](whale::Interpreter &i) {
      return std::make_unique<whale::Training>(i, std::move(options));
    });
  }

  ~PyTraining() {
    py::gil_scoped_release release;
    run.reset();
  }

  /// The next step's report, or None once the run is over.
  py::object next() {
    if (PyErr_CheckSignals() != 0)
      throw py::error_already_set();
    whale::StepReport r;
    bool stepped;
    {
      py::gil_scoped_release release;
      stepped = run->next(r);
    }
    raisePending();
    return stepped ? py::object(stepTuple(r)) : py::object(py::none());
  }

  void stop() { run->stop(); }

  int64_t stepsDone() const { return run->stepsDone(); }

  void save(const std::string &path) {
    std::string error;
    bool ok;
    {
      py::gil_scoped_release release;
      ok = run->save(path, error);
    }
    if (!ok)
      throw WhaleError(error);
  }

  py::dict parameters() {
    std::vector<whale::TensorInfo> info;
    std::vector<std::vector<float>> values;
    std::string error;
    bool ok;
    {
      py::gil_scoped_release release;
      ok = run->parameters(info, values, error);
    }
    if (!ok)
      throw WhaleError(error);
    py::dict out;
    for (size_t i = 0; i < info.size(); ++i)
      out[py::str(info[i].name)] = parameterArray(values[i], info[i].shape);
    return out;
  }

  py::list parameterInfo() {
    py::list out;
    for (const whale::TensorInfo &t : run->parameterInfo())
      out.append(py::make_tuple(t.name, t.dtype, t.shape));
    return out;
  }

  /// Writes (name, float32 C-contiguous array) pairs, shapes checked by the
  /// caller (whale.Run.set_parameters), in one pass over the ranks.
  void writeParameters(const py::list &pairs) {
    std::vector<py::array_t<float, py::array::c_style>> keep;
    std::vector<whale::Training::ParameterValues> values;
    for (py::handle h : pairs) {
      auto pair = h.cast<py::tuple>();
      keep.push_back(pair[1].cast<py::array_t<float, py::array::c_style>>());
      values.push_back({pair[0].cast<std::string>(), keep.back().data(),
                        static_cast<int64_t>(keep.back().size())});
    }
    std::string error;
    bool ok;
    {
      py::gil_scoped_release release;
      ok = run->writeParameters(values, error);
    }
    if (!ok)
      throw WhaleError(error);
  }

  py::dict finish() {
    whale::TrainResult r;
    {
      py::gil_scoped_release release;
      r = run->finish();
    }
    raisePending();
    py::dict d;
    d["ok"] = r.ok;
    d["stopped"] = r.stopped;
    d["error"] = r.error;
    d["first_step"] = r.firstStep;
    d["losses"] = r.losses;
    d["eval_losses"] = r.evalLosses;
    d["comm_bytes"] = r.commBytes;
    d["peak_memory"] = r.peakMemory;
    d["local_batches"] = r.localBatches;
    return d;
  }

private:
  whale::HostBatchOutcome callFill(int64_t step,
                                   std::vector<whale::HostBatchBuffer> &bufs) {
    py::gil_scoped_acquire acquire;
    whale::HostBatchOutcome outcome;
    try {
      py::dict arrays; // by input name, in the model's order
      for (whale::HostBatchBuffer &b : bufs) {
        std::vector<py::ssize_t> dims(b.shape.begin(), b.shape.end());
        // A view of the run's own buffer (no copy): its base keeps
        // NumPy from owning it; it is valid during this call only.
        py::object base = py::capsule(b.data, [](void *) {});
        if (b.dtype == "i32")
          arrays[py::str(b.name)] =
              py::array_t<int32_t>(dims, static_cast<int32_t *>(b.data), base);
        else
          arrays[py::str(b.name)] =
              py::array_t<float>(dims, static_cast<float *>(b.data), base);
      }
      py::object result = fill(step, arrays);
      if (result.is(py::bool_(false)))
        outcome.stop = true;
    } catch (py::error_already_set &e) {
      // The run ends cleanly before this step, as a stop does (saving
      // where asked): the host's data ran out, or it raised (Ctrl-C
      // included), which next() raises again.
      const bool ended = e.matches(PyExc_StopIteration);
      outcome.stop = true;
      outcome.error = ended ? "the host's data ran out"
                            : std::string("Python raised ") + e.what();
      if (!ended)
        pending = std::make_unique<py::error_already_set>(std::move(e));
    }
    return outcome;
  }

  void raisePending() {
    if (!pending)
      return;
    std::unique_ptr<py::error_already_set> e = std::move(pending);
    throw std::move(*e);
  }

  py::object fill;
  std::unique_ptr<py::error_already_set> pending;
  std::unique_ptr<whale::Training> run;
};

whale::TrainOptions trainOptions(const py::dict &o) {
  whale::TrainOptions t;
  auto str = [&](const char *k, std::string &out) {
    if (o.contains(k) && !o[k].is_none())
      out = o[k].cast<std::string>();
  };
  str("model", t.model);
  str("cluster", t.cluster);
  str("metrics", t.metricsPath);
  str("trace", t.tracePath);
  str("save", t.savePath);
  str("load", t.loadPath);
  if (o.contains("steps") && !o["steps"].is_none())
    t.steps = o["steps"].cast<int64_t>();
  if (o.contains("seed") && !o["seed"].is_none())
    t.seed = o["seed"].cast<uint64_t>();
  if (o.contains("threads"))
    t.threads = o["threads"].cast<int>();
  if (o.contains("keep_parameters"))
    t.keepParameters = o["keep_parameters"].cast<bool>();
  if (o.contains("save_ranks"))
    t.saveRanks = o["save_ranks"].cast<bool>();
  if (o.contains("even"))
    t.evenPlan = o["even"].cast<bool>();
  if (o.contains("fuse"))
    t.fuse = o["fuse"].cast<bool>();
  if (o.contains("overlap"))
    t.overlap = o["overlap"].cast<bool>();
  return t;
}

} // namespace

PYBIND11_MODULE(_whale, m) {
  m.doc() = "Whale's native layer; use the `whale` package";
  py::register_exception<WhaleError>(m, "WhaleError");

  py::class_<PyInterpreter>(m, "Interpreter")
      .def(py::init([](std::vector<std::string> searchPath,
                       std::map<std::string, int64_t> dims,
                       std::map<std::string, std::string> defines,
                       py::dict configs, std::optional<int64_t> batch) {
             return std::make_unique<PyInterpreter>(
                 interpreterOptions(searchPath, dims, defines, configs, batch));
           }),
           py::arg("search_path"), py::arg("dims"), py::arg("defines"),
           py::arg("configs"), py::arg("batch"))
      .def("load_file",
           [](PyInterpreter &w, const std::string &path) {
             return locked(
                 w, [&](whale::Interpreter &i) { return i.loadFile(path); });
           })
      .def("load_string",
           [](PyInterpreter &w, const std::string &source,
              const std::string &name) {
             return locked(w, [&](whale::Interpreter &i) {
               return i.loadString(source, name);
             });
           })
      .def("diagnostics",
           [](PyInterpreter &w) {
             std::vector<whale::Diagnostic> all = locked(
                 w, [](whale::Interpreter &i) { return i.diagnostics(); });
             py::list out;
             for (const whale::Diagnostic &d : all)
               out.append(diagnosticDict(d));
             return out;
           })
      .def("render_diagnostics",
           [](PyInterpreter &w) {
             return locked(w, [](whale::Interpreter &i) {
               return i.renderDiagnostics();
             });
           })
      .def("emit",
           [](PyInterpreter &w, const std::string &stage) {
             std::optional<whale::Stage> s = whale::parseStage(stage);
             if (!s)
               throw py::value_error("unknown stage '" + stage +
                                     "': ast, whale, grad, train or runtime");
             std::string error;
             std::optional<std::string> text =
                 locked(w, [&](whale::Interpreter &i) {
                   std::optional<std::string> t = i.emit(*s);
                   if (!t)
                     error = i.renderDiagnostics();
                   return t;
                 });
             if (!text)
               throw WhaleError(error);
             return *text;
           })
      .def("constants",
           [](PyInterpreter &w) {
             return locked(w,
                           [](whale::Interpreter &i) { return i.constants(); });
           })
      .def("plan_json",
           [](PyInterpreter &w, const std::string &cluster) {
             whale::PlanQuery q;
             q.cluster = cluster;
             std::string json, error;
             if (!locked(w, [&](whale::Interpreter &i) {
                   return whale::planJson(i, q, json, error);
                 }))
               throw WhaleError(error);
             return json;
           })
      .def("sim_json", [](PyInterpreter &w, const std::string &cluster,
                          const std::string &profile) {
        whale::PlanQuery q;
        q.cluster = cluster;
        q.profile = profile;
        std::string json, error;
        if (!locked(w, [&](whale::Interpreter &i) {
              return whale::simulationJson(i, q, json, error);
            }))
          throw WhaleError(error);
        return json;
      });

  m.def(
      "search_json",
      [](const std::string &file, std::vector<std::string> searchPath,
         std::map<std::string, int64_t> dims,
         std::map<std::string, std::string> defines, py::dict configs,
         const std::string &cluster, const std::string &profile, int top,
         int jobs, py::object progress) {
        whale::PlanQuery q;
        q.cluster = cluster;
        q.profile = profile;
        q.top = top;
        q.jobs = jobs;
        std::unique_ptr<py::error_already_set> raised;
        std::mutex lock;
        if (!progress.is_none())
          q.progress = [&](size_t done, size_t total, const std::string &line) {
            py::gil_scoped_acquire acquire;
            std::lock_guard<std::mutex> guard(lock);
            if (raised)
              return;
            try {
              progress(done, total, line);
            } catch (py::error_already_set &e) {
              raised = std::make_unique<py::error_already_set>(std::move(e));
            }
          };
        whale::InterpreterOptions options = interpreterOptions(
            searchPath, dims, defines, configs, std::nullopt);
        std::string json, error;
        bool ok;
        {
          py::gil_scoped_release release;
          ok = whale::searchJson(file, options, q, json, error);
        }
        if (raised)
          throw std::move(*raised);
        if (!ok)
          throw WhaleError(error);
        return json;
      },
      py::arg("file"), py::arg("search_path"), py::arg("dims"),
      py::arg("defines"), py::arg("configs"), py::arg("cluster"),
      py::arg("profile"), py::arg("top"), py::arg("jobs"), py::arg("progress"));

  m.def(
      "read_tensors",
      [](const std::string &path) {
        std::vector<whale::StoredArray> arrays;
        std::string error;
        bool ok;
        {
          py::gil_scoped_release release;
          ok = whale::readTensors(path, arrays, error);
        }
        if (!ok)
          throw WhaleError(error);
        py::dict out;
        for (whale::StoredArray &a : arrays) {
          std::vector<py::ssize_t> dims(a.info.shape.begin(),
                                        a.info.shape.end());
          out[py::str(a.info.name)] =
              a.info.dtype == "f32"   ? filledArray<float>(dims, a)
              : a.info.dtype == "i32" ? filledArray<int32_t>(dims, a)
                                      : filledArray<int64_t>(dims, a);
        }
        return out;
      },
      py::arg("path"));

  m.def(
      "report_html",
      [](const std::string &metrics, const std::string &plan,
         const std::string &trace) {
        std::string error, html;
        {
          py::gil_scoped_release release;
          html = whale::runReportHtml(metrics, plan, trace, error);
        }
        if (html.empty())
          throw WhaleError(error);
        return html;
      },
      py::arg("metrics"), py::arg("plan"), py::arg("trace"));

  py::class_<PyTraining>(m, "Training")
      .def(py::init([](PyInterpreter &interp, py::dict options,
                       py::object fill) {
             return std::make_unique<PyTraining>(interp, trainOptions(options),
                                                 fill);
           }),
           py::arg("interp"), py::arg("options"), py::arg("fill"),
           py::keep_alive<1, 2>())
      .def("next", &PyTraining::next)
      .def("stop", &PyTraining::stop)
      .def("steps_done", &PyTraining::stepsDone)
      .def("save", &PyTraining::save)
      .def("parameters", &PyTraining::parameters)
      .def("parameter_info", &PyTraining::parameterInfo)
      .def("write_parameters", &PyTraining::writeParameters)
      .def("finish", &PyTraining::finish);

  py::class_<whale::Job>(m, "Job")
      .def(py::init([](PyInterpreter &interp, const std::string &model,
                       std::optional<int64_t> batch,
                       std::optional<int64_t> steps,
                       std::optional<uint64_t> seed, int threads) {
             whale::JobOptions o;
             o.model = model;
             o.batch = batch;
             o.steps = steps;
             o.seed = seed;
             o.threads = threads;
             std::string error;
             std::unique_ptr<whale::Job> job =
                 locked(interp, [&](whale::Interpreter &i) {
                   return whale::Job::create(i, o, error);
                 });
             if (!job)
               throw WhaleError(error);
             return job;
           }),
           py::arg("interp"), py::arg("model"), py::arg("batch"),
           py::arg("steps"), py::arg("seed"), py::arg("threads"))
      .def("model", &whale::Job::model)
      .def("inputs",
           [](const whale::Job &j) {
             py::list out;
             for (const whale::TensorInfo &t : j.inputs())
               out.append(py::make_tuple(t.name, t.dtype, t.shape));
             return out;
           })
      .def("parameters",
           [](const whale::Job &j) {
             py::list out;
             for (const whale::TensorInfo &t : j.parameters())
               out.append(py::make_tuple(t.name, t.dtype, t.shape));
             return out;
           })
      .def("step",
           [](whale::Job &j, const py::list &arrays) {
             const std::vector<whale::TensorInfo> &in = j.inputs();
             if (arrays.size() != in.size())
               throw py::value_error(
                   "the model takes " + std::to_string(in.size()) +
                   " inputs, not " + std::to_string(arrays.size()));
             std::vector<py::buffer_info> views;
             std::vector<const void *> ptrs;
             for (size_t i = 0; i < in.size(); ++i) {
               py::buffer_info b = arrays[i].cast<py::buffer>().request();
               std::vector<int64_t> shape(b.shape.begin(), b.shape.end());
               if (shape != in[i].shape)
                 throw py::value_error("input '" + in[i].name + "' has shape " +
                                       shapeText(shape) + "; the model's is " +
                                       shapeText(in[i].shape));
               if (!formatIs(b, in[i].dtype) || !cContiguous(b))
                 throw py::value_error(
                     "input '" + in[i].name + "' must be a C-contiguous " +
                     (in[i].dtype == "f32" ? "float32" : "int32") + " array");
               ptrs.push_back(b.ptr);
               views.push_back(std::move(b));
             }
             std::string error;
             bool ok;
             {
               py::gil_scoped_release release;
               ok = j.step(ptrs.data(), error);
             }
             if (!ok)
               throw WhaleError(error);
             return stepTuple(j.lastStep());
           })
      .def("steps_done", &whale::Job::stepsDone)
      .def("copied_input_bytes", &whale::Job::copiedInputBytes)
      .def("read_parameter",
           [](const whale::Job &j, const std::string &name) {
             for (const whale::TensorInfo &t : j.parameters())
               if (t.name == name) {
                 std::vector<py::ssize_t> dims(t.shape.begin(), t.shape.end());
                 py::array_t<float> a(dims);
                 std::string error;
                 if (!j.readParameter(name, a.mutable_data(), t.elements(),
                                      error))
                   throw WhaleError(error);
                 return a;
               }
             throw py::key_error("no parameter '" + name + "'");
           })
      .def(
          "write_parameter",
          [](whale::Job &j, const std::string &name,
             py::array_t<float, py::array::c_style> values) {
            for (const whale::TensorInfo &t : j.parameters())
              if (t.name == name) {
                std::vector<int64_t> shape(values.shape(),
                                           values.shape() + values.ndim());
                if (shape != t.shape)
                  throw py::value_error("parameter '" + name + "' has shape " +
                                        shapeText(t.shape) + ", not " +
                                        shapeText(shape));
                std::string error;
                if (!j.writeParameter(name, values.data(), t.elements(), error))
                  throw WhaleError(error);
                return;
              }
            throw py::key_error("no parameter '" + name + "'");
          })
      .def("save",
           [](const whale::Job &j, const std::string &path) {
             std::string error;
             bool ok;
             {
               py::gil_scoped_release release;
               ok = j.save(path, error);
             }
             if (!ok)
               throw WhaleError(error);
           })
      .def("load", [](whale::Job &j, const std::string &path) {
        std::string error;
        bool ok;
        {
          py::gil_scoped_release release;
          ok = j.load(path, error);
        }
        if (!ok)
          throw WhaleError(error);
      });
}
