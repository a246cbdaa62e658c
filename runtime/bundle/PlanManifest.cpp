//===- PlanManifest.cpp - a compiled plan, without MLIR -------------------===//

#include "runtime/bundle/PlanManifest.h"

#include "runtime/cuda/SmShare.h"
#include "runtime/run/BatchRows.h"
#include "support/InputFile.h"
#include "support/JsonString.h"
#include "support/JsonValue.h"
#include "support/Limits.h"
#include "support/OutputFile.h"

#include <cmath>
#include <cstdio>
#include <cstring>

namespace whale {

int64_t PlanManifest::firstRow(int64_t replica) const {
  return firstRowOf(localBatches, rowGroup, replica);
}

namespace {

// ---- writing ---------------------------------------------------------------

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

std::string ints(const std::vector<int64_t> &v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i)
    out += (i ? ", " : "") + std::to_string(v[i]);
  return out + "]";
}

std::string tensor(const TensorSpec &t) {
  return std::string("{\"dtype\": ") +
         (t.dtype == WHALE_RT_I32 ? "\"i32\"" : "\"f32\"") +
         ", \"shape\": " + ints(t.shape) + "}";
}

template <typename T, typename F>
std::string list(const std::vector<T> &v, const std::string &indent, F each) {
  if (v.empty())
    return "[]";
  std::string out = "[\n";
  for (size_t i = 0; i < v.size(); ++i)
    out += indent + "  " + each(v[i]) + (i + 1 < v.size() ? ",\n" : "\n");
  return out + indent + "]";
}

std::string dataJson(const DataSpec &d) {
  return "{\"kind\": " + rt::jsonQuote(d.kind) +
         ", \"path\": " + rt::jsonQuote(d.path) +
         ", \"features\": " + rt::jsonQuote(d.features) +
         ", \"labels\": " + rt::jsonQuote(d.labels) +
         ", \"dtype\": " + rt::jsonQuote(d.dtype) +
         ", \"seq\": " + std::to_string(d.seq) +
         ", \"batch\": " + std::to_string(d.batch) +
         ", \"seed\": " + std::to_string(d.seed) +
         ", \"classes\": " + std::to_string(d.classes) +
         ",\n           \"inputs\": " + list(d.inputs, "           ", tensor) +
         "}";
}

// ---- reading ---------------------------------------------------------------

using rt::JsonValue;

/// Reads fields of a JSON value; the first failure is kept with the path
/// of the field (`programs[0].stages[1].entry`).
class Reader {
public:
  explicit Reader(std::string source) : source(std::move(source)) {}
  std::string error;

  bool fail(const std::string &at, const std::string &what) {
    if (error.empty())
      error = source + ": " + at + ": " + what;
    return false;
  }

  const JsonValue *field(const JsonValue &obj, const std::string &at,
                         const std::string &key, JsonValue::Kind kind,
                         const char *what) {
    const JsonValue *v = obj.find(key);
    if (!v) {
      fail(at.empty() ? key : at + "." + key, "missing");
      return nullptr;
    }
    if (v->kind != kind) {
      fail(at.empty() ? key : at + "." + key, std::string("expected ") + what);
      return nullptr;
    }
    return v;
  }

  bool integer(const JsonValue &obj, const std::string &at,
               const std::string &key, int64_t lo, int64_t hi, int64_t &out) {
    const JsonValue *v =
        field(obj, at, key, JsonValue::Kind::Number, "an integer");
    if (!v)
      return false;
    return integerValue(*v, at.empty() ? key : at + "." + key, lo, hi, out);
  }

  bool integerValue(const JsonValue &v, const std::string &at, int64_t lo,
                    int64_t hi, int64_t &out) {
    if (v.kind != JsonValue::Kind::Number || std::floor(v.number) != v.number ||
        v.number < static_cast<double>(lo) ||
        v.number > static_cast<double>(hi))
      return fail(at, "expected an integer from " + std::to_string(lo) +
                          " to " + std::to_string(hi));
    out = static_cast<int64_t>(v.number);
    return true;
  }

  bool real(const JsonValue &obj, const std::string &at, const std::string &key,
            double &out) {
    const JsonValue *v =
        field(obj, at, key, JsonValue::Kind::Number, "a number");
    if (!v)
      return false;
    out = v->number;
    return true;
  }

  bool text(const JsonValue &obj, const std::string &at, const std::string &key,
            std::string &out) {
    const JsonValue *v =
        field(obj, at, key, JsonValue::Kind::String, "a string");
    if (!v)
      return false;
    out = v->string;
    return true;
  }

  bool flag(const JsonValue &obj, const std::string &at, const std::string &key,
            bool &out) {
    const JsonValue *v =
        field(obj, at, key, JsonValue::Kind::Bool, "true or false");
    if (!v)
      return false;
    out = v->boolean;
    return true;
  }

  /// An array of at most `most` integers in [lo, hi].
  bool integers(const JsonValue &obj, const std::string &at,
                const std::string &key, int64_t lo, int64_t hi, size_t most,
                std::vector<int64_t> &out) {
    std::string where = at.empty() ? key : at + "." + key;
    const JsonValue *v =
        field(obj, at, key, JsonValue::Kind::Array, "an array");
    if (!v)
      return false;
    if (v->items.size() > most)
      return fail(where, "more than " + std::to_string(most) + " entries");
    out.clear();
    for (size_t i = 0; i < v->items.size(); ++i) {
      int64_t x;
      if (!integerValue(v->items[i], where + "[" + std::to_string(i) + "]", lo,
                        hi, x))
        return false;
      out.push_back(x);
    }
    return true;
  }

  /// Calls `each(item, path)` for every object of array `key`.
  template <typename F>
  bool objects(const JsonValue &obj, const std::string &at,
               const std::string &key, F each) {
    std::string where = at.empty() ? key : at + "." + key;
    const JsonValue *v =
        field(obj, at, key, JsonValue::Kind::Array, "an array");
    if (!v)
      return false;
    for (size_t i = 0; i < v->items.size(); ++i) {
      std::string item = where + "[" + std::to_string(i) + "]";
      if (v->items[i].kind != JsonValue::Kind::Object)
        return fail(item, "expected an object");
      if (!each(v->items[i], item))
        return false;
    }
    return true;
  }

  /// A shape: at most 8 dimensions, each from 1, of at most
  /// kMaxTensorElements elements in all.
  bool shape(const JsonValue &obj, const std::string &at,
             std::vector<int64_t> &out) {
    if (!integers(obj, at, "shape", 1, kMaxTensorElements, 8, out))
      return false;
    int64_t n = 1;
    for (int64_t d : out)
      if (!productWithin(n, d, kMaxTensorElements, n))
        return fail(at + ".shape", "more than 2^40 elements");
    return true;
  }

  bool tensorSpec(const JsonValue &obj, const std::string &at,
                  TensorSpec &out) {
    std::string dtype;
    if (!text(obj, at, "dtype", dtype) || !shape(obj, at, out.shape))
      return false;
    if (dtype != "f32" && dtype != "i32")
      return fail(at + ".dtype", "expected \"f32\" or \"i32\"");
    out.dtype = dtype == "f32" ? WHALE_RT_F32 : WHALE_RT_I32;
    return true;
  }

  /// A data source's spec whose batch and inputs' rows are `batch`.
  bool dataSpec(const JsonValue &data, const std::string &at, int64_t batch,
                DataSpec &d) {
    int64_t seed = 0;
    if (!text(data, at, "kind", d.kind) || !text(data, at, "path", d.path) ||
        !text(data, at, "features", d.features) ||
        !text(data, at, "labels", d.labels) ||
        !text(data, at, "dtype", d.dtype) ||
        !integer(data, at, "seq", 1, kMaxTensorElements, d.seq) ||
        !integer(data, at, "batch", 1, kMaxTensorElements, d.batch) ||
        !integer(data, at, "seed", 0, int64_t(1) << 53, seed) ||
        !integer(data, at, "classes", 0, kMaxTensorElements, d.classes) ||
        !objects(data, at, "inputs",
                 [&](const JsonValue &v, const std::string &where) {
                   d.inputs.emplace_back();
                   return tensorSpec(v, where, d.inputs.back());
                 }))
      return false;
    d.seed = static_cast<uint64_t>(seed);
    if (d.kind != "synthetic" && d.kind != "text" && d.kind != "tokens" &&
        d.kind != "arrays")
      return fail(at + ".kind", "expected synthetic, text, tokens or arrays, "
                                "not \"" +
                                    d.kind + "\"");
    // A synthetic task's teacher is features x classes numbers: its
    // classes are a model's logits, far below this.
    if (d.kind == "synthetic" && (d.classes < 1 || d.classes > kMaxClasses))
      return fail(at + ".classes", "expected from 1 to " +
                                       std::to_string(kMaxClasses) +
                                       " classes for synthetic data");
    if (d.batch != batch)
      return fail(at + ".batch",
                  "expected the global batch " + std::to_string(batch));
    if (d.inputs.empty())
      return fail(at + ".inputs", "expected the model's inputs");
    for (size_t k = 0; k < d.inputs.size(); ++k)
      if (d.inputs[k].shape.empty() || d.inputs[k].shape[0] != batch)
        return fail(at + ".inputs[" + std::to_string(k) + "]",
                    "expected the global batch's rows first");
    return true;
  }

private:
  std::string source;
};

/// A device as the runtime opens it: cpu:N, cuda:N or cuda:N@sms=K.
bool deviceName(const std::string &name) {
  rt::cuda::CudaName gpu; // cuda:N, or cuda:N@sms=K on a share of its SMs
  if (rt::cuda::parseCudaName(name, gpu))
    return gpu.ordinal >= 0 && gpu.sms >= 0;
  const size_t n = std::strlen("cpu:");
  return name.compare(0, n, "cpu:") == 0 && name.size() > n &&
         name.size() <= n + 6 &&
         name.find_first_not_of("0123456789", n) == std::string::npos;
}

/// A library's file: a plain name beside the manifest.
bool plainFileName(const std::string &name) {
  return !name.empty() && name != "." && name != ".." &&
         name.find('/') == std::string::npos &&
         name.find('\0') == std::string::npos;
}

} // namespace

std::string writeManifest(const PlanManifest &m, const std::string &path) {
  const TrainSettings &t = m.settings;
  const DataSpec &d = m.data;
  std::string s = "{\n";
  s += "  \"format\": \"whale-plan\",\n";
  s += "  \"version\": " + std::to_string(kManifestVersion) + ",\n";
  s += "  \"model\": " + rt::jsonQuote(m.model) + ",\n";
  s += "  \"train\": {\"steps\": " + std::to_string(t.steps) +
       ", \"seed\": " + std::to_string(t.seed) + ", \"lr\": " + num(t.baseLr) +
       ", \"schedule\": " + rt::jsonQuote(t.schedule.kind) +
       ", \"warmup\": " + num(t.schedule.warmup) +
       ", \"min_lr\": " + num(t.schedule.minLr) +
       ", \"optimizer_states\": " + std::to_string(t.stateCount) +
       ", \"save_every\": " + std::to_string(t.saveEvery) +
       ", \"log_every\": " + std::to_string(t.logEvery) + "},\n";
  s += std::string("  \"amp_bf16\": ") + (m.ampBf16 ? "true" : "false") + ",\n";
  s += "  \"stages\": " + std::to_string(m.stages) + ",\n";
  s += "  \"replicas\": " + std::to_string(m.replicas) + ",\n";
  s += "  \"global_batch\": " + std::to_string(m.globalBatch) + ",\n";
  s += "  \"grid\": " + ints(m.grid) + ",\n";
  s += "  \"local_batches\": " + ints(m.localBatches) + ",\n";
  if (m.rowGroup > 1)
    s += "  \"row_group\": " + std::to_string(m.rowGroup) + ",\n";
  s += "  \"replica_library\": " + ints(m.replicaLibrary) + ",\n";
  s += "  \"devices\": " +
       list(m.devices, "  ",
            [](const RankDevice &dev) {
              return "{\"name\": " + rt::jsonQuote(dev.name) +
                     ", \"threads\": " + std::to_string(dev.threads) +
                     ", \"memory\": " + std::to_string(dev.memory) +
                     ", \"node\": " + rt::jsonQuote(dev.node) +
                     ", \"place\": " + rt::jsonQuote(dev.place) + "}";
            }) +
       ",\n";
  s += "  \"data\": " + dataJson(d) + ",\n";
  if (m.eval)
    s += "  \"eval\": {\"file\": " + rt::jsonQuote(m.eval->file) +
         ", \"entry\": " + rt::jsonQuote(m.eval->entry) +
         ", \"every\": " + std::to_string(t.evalEvery) +
         ", \"steps\": " + std::to_string(t.evalSteps) +
         ",\n           \"data\": " + dataJson(m.eval->data) + "},\n";
  s +=
      "  \"libraries\": " +
      list(m.libraries, "  ",
           [](const ProgramLibrary &l) {
             return "{\"file\": " + rt::jsonQuote(l.file) + ", \"stages\": " +
                    list(l.stages, "    ",
                         [](const StageProgram &st) {
                           return "{\"entry\": " + rt::jsonQuote(st.entry) +
                                  ", \"shards\": " + std::to_string(st.shards) +
                                  ",\n       \"inputs\": " +
                                  list(st.inputs, "       ", tensor) +
                                  ",\n       \"params\": " +
                                  list(st.params, "       ",
                                       [](const Parameter &p) {
                                         return "{\"name\": " +
                                                rt::jsonQuote(p.name) +
                                                ", \"shape\": " +
                                                ints(p.shape) + ", \"axis\": " +
                                                std::to_string(p.axis) +
                                                ", \"shards\": " +
                                                std::to_string(p.shards) +
                                                ", \"weights\": " +
                                                ints(p.weights) +
                                                ", \"state_owner\": " +
                                                std::to_string(p.stateOwner) +
                                                ", \"owner_shards\": " +
                                                std::to_string(p.ownerShards) +
                                                ", \"sharding\": " +
                                                std::to_string(p.sharding) +
                                                ", \"value_owned\": " +
                                                (p.valueOwned ? "true"
                                                              : "false") +
                                                "}";
                                       }) +
                                  "}";
                         }) +
                    "}";
           }) +
      ",\n";
  s += "  \"files\": " +
       list(m.files, "  ",
            [](const BundleFile &f) {
              return "{\"name\": " + rt::jsonQuote(f.name) +
                     ", \"bytes\": " + std::to_string(f.bytes) +
                     ", \"crc32c\": " + std::to_string(f.crc32c) + "}";
            }) +
       "\n}\n";
  return rt::writeFileWhole(path, "the compiled plan", {s});
}

bool parseManifest(const std::string &text, const std::string &source,
                   PlanManifest &m, std::string &error) {
  JsonValue root;
  if (!rt::parseJson(text, root, error)) {
    error = source + ": " + error;
    return false;
  }
  Reader r(source);
  auto done = [&](bool ok) {
    if (!ok)
      error = r.error;
    return ok;
  };
  if (root.kind != JsonValue::Kind::Object)
    return done(r.fail("the top level", "expected an object"));
  std::string format;
  int64_t version = 0;
  if (!r.text(root, "", "format", format))
    return done(false);
  if (format != "whale-plan")
    return done(r.fail("format", "expected \"whale-plan\" (this is not a "
                                 "compiled Whale plan)"));
  if (!r.integer(root, "", "version", 0, 1 << 20, version))
    return done(false);
  if (version != kManifestVersion)
    return done(r.fail("version", "this runner reads version " +
                                      std::to_string(kManifestVersion) +
                                      "; compile the plan again with the "
                                      "whale of this runner"));
  m = PlanManifest();
  const int64_t kMaxRanks = 1 << 16;
  TrainSettings &t = m.settings;
  if (!r.text(root, "", "model", m.model))
    return done(false);
  const JsonValue *train =
      r.field(root, "", "train", JsonValue::Kind::Object, "an object");
  int64_t seed = 0, states = 0;
  if (!train || !r.integer(*train, "train", "steps", 1, kMaxSteps, t.steps) ||
      !r.integer(*train, "train", "seed", 0, int64_t(1) << 53, seed) ||
      !r.real(*train, "train", "lr", t.baseLr) ||
      !r.text(*train, "train", "schedule", t.schedule.kind) ||
      !r.real(*train, "train", "warmup", t.schedule.warmup) ||
      !r.real(*train, "train", "min_lr", t.schedule.minLr) ||
      !r.integer(*train, "train", "optimizer_states", 0, 2, states) ||
      !r.integer(*train, "train", "save_every", 0, kMaxSteps, t.saveEvery) ||
      !r.integer(*train, "train", "log_every", 1, kMaxSteps, t.logEvery) ||
      !r.flag(root, "", "amp_bf16", m.ampBf16) ||
      !r.integer(root, "", "stages", 1, kMaxTaskGraphs, m.stages) ||
      !r.integer(root, "", "replicas", 1, kMaxRanks, m.replicas) ||
      !r.integer(root, "", "global_batch", 1, kMaxTensorElements,
                 m.globalBatch) ||
      !r.integers(root, "", "grid", 0, kMaxRanks, kMaxRanks, m.grid) ||
      !r.integers(root, "", "local_batches", 1, kMaxTensorElements, kMaxRanks,
                  m.localBatches) ||
      !r.integers(root, "", "replica_library", 0, kMaxRanks, kMaxRanks,
                  m.replicaLibrary))
    return done(false);
  // Plans whose shard groups keep their own rows write no row_group.
  if (root.find("row_group") &&
      !r.integer(root, "", "row_group", 1, kMaxRanks, m.rowGroup))
    return done(false);
  t.seed = static_cast<uint64_t>(seed);
  t.stateCount = static_cast<int>(states);
  if (t.schedule.warmup < 0 || !std::isfinite(t.schedule.warmup))
    return done(r.fail("train.warmup", "expected a number from 0"));
  // What the compiler writes, and nothing else taken for a default.
  if (t.schedule.kind != "" && t.schedule.kind != "constant" &&
      t.schedule.kind != "cosine")
    return done(
        r.fail("train.schedule", "expected \"constant\" or \"cosine\", not \"" +
                                     t.schedule.kind + "\""));
  if (std::string err = t.checkLength(m.globalBatch); !err.empty())
    return done(r.fail("train.steps", err));
  if (!r.objects(
          root, "", "devices", [&](const JsonValue &d, const std::string &at) {
            RankDevice dev;
            int64_t threads = 0;
            if (!r.text(d, at, "name", dev.name) ||
                !r.integer(d, at, "threads", 0, kMaxThreads, threads) ||
                !r.integer(d, at, "memory", 0, INT64_MAX / 2, dev.memory))
              return false;
            dev.threads = static_cast<int>(threads);
            if (!deviceName(dev.name))
              return r.fail(at + ".name",
                            "expected cpu:N, cuda:N or cuda:N@sms=K, not \"" +
                                dev.name + "\"");
            // Where it is (an older bundle does not say: this machine).
            if (d.find("place") || d.find("node")) {
              if (!r.text(d, at, "node", dev.node) ||
                  !r.text(d, at, "place", dev.place))
                return false;
            } else {
              const std::string kind = dev.name.substr(0, dev.name.find(':'));
              int64_t index = 0;
              for (const RankDevice &before : m.devices)
                index += before.name.rfind(kind + ":", 0) == 0;
              dev.node = "localhost";
              dev.place = "localhost/" + kind + ":" + std::to_string(index);
            }
            m.devices.push_back(dev);
            return true;
          }))
    return done(false);

  // The grid: every rank a device, no device twice.
  const int64_t ranks = m.stages * m.replicas;
  if (static_cast<int64_t>(m.grid.size()) != ranks)
    return done(r.fail("grid", "expected stages x replicas = " +
                                   std::to_string(ranks) + " devices"));
  std::vector<bool> used(m.devices.size(), false);
  for (size_t i = 0; i < m.grid.size(); ++i) {
    int64_t dev = m.grid[i];
    if (dev >= static_cast<int64_t>(m.devices.size()) || used[dev])
      return done(r.fail("grid[" + std::to_string(i) + "]",
                         "expected a device index below " +
                             std::to_string(m.devices.size()) +
                             " that no other rank has"));
    used[dev] = true;
  }
  if (static_cast<int64_t>(m.localBatches.size()) != m.replicas)
    return done(r.fail("local_batches", "expected one entry per replica"));
  if (m.replicas % m.rowGroup != 0)
    return done(r.fail("row_group", "expected a divisor of the " +
                                        std::to_string(m.replicas) +
                                        " replicas"));
  for (int64_t q = 0; q < m.replicas; ++q)
    if (m.localBatches[q] != m.localBatches[q - q % m.rowGroup])
      return done(r.fail("local_batches[" + std::to_string(q) + "]",
                         "expected the rows of the first replica of its row "
                         "group (they share them)"));
  int64_t rows = 0;
  for (int64_t b : dataReplicaRows(m.localBatches, m.rowGroup))
    rows += b; // each at most 2^40, at most 2^16 of them
  if (rows != m.globalBatch)
    return done(r.fail("local_batches", "they add up to " +
                                            std::to_string(rows) +
                                            ", not the global batch " +
                                            std::to_string(m.globalBatch)));

  // The data and its inputs: the global batch's rows first.
  const JsonValue *data =
      r.field(root, "", "data", JsonValue::Kind::Object, "an object");
  if (!data || !r.dataSpec(*data, "data", m.globalBatch, m.data))
    return done(false);
  const DataSpec &d = m.data;

  // Held-out evaluation, exactly when the train block asks for it; its
  // data feed the same inputs.
  if (const JsonValue *ev = root.find("eval")) {
    std::string at = "eval";
    int64_t every = 0, steps = 0;
    EvalProgram e;
    if (ev->kind != JsonValue::Kind::Object)
      return done(r.fail(at, "expected an object"));
    const JsonValue *edata =
        r.field(*ev, at, "data", JsonValue::Kind::Object, "an object");
    if (!r.text(*ev, at, "file", e.file) ||
        !r.text(*ev, at, "entry", e.entry) ||
        !r.integer(*ev, at, "every", 1, kMaxSteps, every) ||
        !r.integer(*ev, at, "steps", 1, kMaxSteps, steps) || !edata ||
        !r.dataSpec(*edata, "eval.data", m.globalBatch, e.data))
      return done(false);
    if (!plainFileName(e.file))
      return done(
          r.fail("eval.file", "expected a file name beside the manifest"));
    if (e.entry.empty())
      return done(r.fail("eval.entry", "expected a symbol name"));
    if (!(e.data.inputs == d.inputs))
      return done(r.fail("eval.data.inputs", "expected the model's inputs"));
    t.evalEvery = every;
    t.evalSteps = steps;
    m.eval = std::move(e);
  }

  // The programs: every stage of every library takes its replica's rows of
  // each input, so the driver's row copies stay in bounds.
  if (!r.objects(
          root, "", "libraries",
          [&](const JsonValue &l, const std::string &at) {
            ProgramLibrary lib;
            if (!r.text(l, at, "file", lib.file))
              return false;
            if (!plainFileName(lib.file))
              return r.fail(at + ".file", "expected a file name beside the "
                                          "manifest");
            if (!r.objects(
                    l, at, "stages",
                    [&](const JsonValue &st, const std::string &sat) {
                      StageProgram sp;
                      if (!r.text(st, sat, "entry", sp.entry) ||
                          !r.integer(st, sat, "shards", 1, kMaxRanks,
                                     sp.shards) ||
                          !r.objects(
                              st, sat, "inputs",
                              [&](const JsonValue &v, const std::string &iat) {
                                sp.inputs.emplace_back();
                                return r.tensorSpec(v, iat, sp.inputs.back());
                              }) ||
                          !r.objects(
                              st, sat, "params",
                              [&](const JsonValue &v, const std::string &pat) {
                                Parameter p;
                                if (!r.text(v, pat, "name", p.name) ||
                                    !r.shape(v, pat, p.shape) ||
                                    !r.integer(v, pat, "axis", -1, 7, p.axis) ||
                                    !r.integer(v, pat, "shards", 1, kMaxRanks,
                                               p.shards) ||
                                    !r.integers(v, pat, "weights", 1, 1 << 20,
                                                kMaxRanks, p.weights))
                                  return false;
                                // Optimizer state sharded over a group:
                                // where it lives (absent: every rank).
                                if (v.find("state_owner") &&
                                    (!r.integer(v, pat, "state_owner", -1,
                                                kMaxRanks, p.stateOwner) ||
                                     !r.integer(v, pat, "owner_shards", 0,
                                                kMaxRanks, p.ownerShards)))
                                  return false;
                                // Owners in sharding groups (shard_group;
                                // absent: the whole group).
                                if (v.find("sharding") &&
                                    !r.integer(v, pat, "sharding", 0, kMaxRanks,
                                               p.sharding))
                                  return false;
                                if (p.sharding > 0 &&
                                    p.stateOwner >= p.sharding)
                                  return r.fail(pat + ".state_owner",
                                                "expected a position in a "
                                                "sharding group of " +
                                                    std::to_string(p.sharding));
                                // The parameter itself on its owner alone
                                // (shard_parameters; absent: everywhere).
                                if (v.find("value_owned") &&
                                    !r.flag(v, pat, "value_owned",
                                            p.valueOwned))
                                  return false;
                                if (p.valueOwned && p.stateOwner < 0)
                                  return r.fail(pat + ".value_owned",
                                                "expected a state_owner to "
                                                "hold the parameter");
                                if (p.axis >=
                                        static_cast<int64_t>(p.shape.size()) ||
                                    (p.shards > 1 && p.axis < 0))
                                  return r.fail(
                                      pat + ".axis",
                                      "expected a dimension of the shape");
                                if (!p.weights.empty() &&
                                    static_cast<int64_t>(p.weights.size()) !=
                                        p.shards)
                                  return r.fail(
                                      pat + ".weights",
                                      "expected one weight per shard");
                                sp.params.push_back(std::move(p));
                                return true;
                              }))
                        return false;
                      if (sp.entry.empty())
                        return r.fail(sat + ".entry", "expected a symbol name");
                      lib.stages.push_back(std::move(sp));
                      return true;
                    }))
              return false;
            if (static_cast<int64_t>(lib.stages.size()) != m.stages)
              return r.fail(at + ".stages", "expected one program per stage (" +
                                                std::to_string(m.stages) + ")");
            m.libraries.push_back(std::move(lib));
            return true;
          }))
    return done(false);
  if (static_cast<int64_t>(m.replicaLibrary.size()) != m.replicas)
    return done(r.fail("replica_library", "expected one entry per replica"));
  for (int64_t rep = 0; rep < m.replicas; ++rep) {
    std::string at = "replica_library[" + std::to_string(rep) + "]";
    if (m.replicaLibrary[rep] >= static_cast<int64_t>(m.libraries.size()))
      return done(r.fail(at, "expected a library index below " +
                                 std::to_string(m.libraries.size())));
    for (int64_t s = 0; s < m.stages; ++s) {
      const StageProgram &sp = m.program(s, rep);
      if (sp.inputs.size() != d.inputs.size())
        return done(r.fail(at, "its stage " + std::to_string(s) +
                                   " program takes " +
                                   std::to_string(sp.inputs.size()) +
                                   " inputs, not the model's " +
                                   std::to_string(d.inputs.size())));
      for (size_t k = 0; k < sp.inputs.size(); ++k) {
        TensorSpec rowsOf = d.inputs[k];
        rowsOf.shape[0] = m.localBatches[rep];
        if (!(sp.inputs[k] == rowsOf))
          return done(r.fail(at, "its stage " + std::to_string(s) +
                                     " program's input " + std::to_string(k) +
                                     " is not the model's input at the "
                                     "replica's " +
                                     std::to_string(m.localBatches[rep]) +
                                     " rows"));
      }
    }
  }

  // The shared objects, each vouched for (runtime/bundle/BundleFiles.h);
  // every entry point named as the compiler names it.
  if (!root.find("files"))
    return done(r.fail("files", "expected the shared objects' sizes and "
                                "checksums (a plan compiled before they were "
                                "kept: compile it again)"));
  if (!r.objects(
          root, "", "files", [&](const JsonValue &f, const std::string &at) {
            BundleFile file;
            int64_t crc = 0;
            if (!r.text(f, at, "name", file.name) ||
                !r.integer(f, at, "bytes", 1, int64_t(1) << 40, file.bytes) ||
                !r.integer(f, at, "crc32c", 0, 0xffffffffLL, crc))
              return false;
            if (!plainFileName(file.name))
              return r.fail(at + ".name", "expected a file name beside "
                                          "the manifest");
            file.crc32c = static_cast<uint32_t>(crc);
            m.files.push_back(std::move(file));
            return true;
          }))
    return done(false);
  auto listed = [&](const std::string &name) {
    for (const BundleFile &f : m.files)
      if (f.name == name)
        return true;
    return false;
  };
  for (size_t k = 0; k < m.libraries.size(); ++k) {
    const std::string at = "libraries[" + std::to_string(k) + "]";
    if (!listed(m.libraries[k].file))
      return done(r.fail(at + ".file", "expected a file the manifest's "
                                       "\"files\" vouch for"));
    for (int64_t s = 0; s < m.stages; ++s)
      if (m.libraries[k].stages[s].entry !=
          m.model + "_stage" + std::to_string(s))
        return done(r.fail(at + ".stages[" + std::to_string(s) + "].entry",
                           "expected \"" + m.model + "_stage" +
                               std::to_string(s) +
                               "\", the stage's rank program"));
  }
  if (m.eval && !listed(m.eval->file))
    return done(r.fail("eval.file", "expected a file the manifest's "
                                    "\"files\" vouch for"));
  if (m.eval && m.eval->entry != m.model)
    return done(r.fail("eval.entry", "expected \"" + m.model +
                                         "\", the model's forward pass"));
  return true;
}

bool readManifest(const std::string &path, PlanManifest &out,
                  std::string &error) {
  std::string text;
  if (std::string err = rt::readRegularFile(path, "the compiled plan",
                                            rt::kMaxTextInput, text);
      !err.empty()) {
    error = err;
    return false;
  }
  return parseManifest(text, path, out, error);
}

} // namespace whale
