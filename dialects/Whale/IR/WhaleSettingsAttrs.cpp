//===- WhaleSettingsAttrs.cpp - #whale.settings and #whale.schedule -------===//
//
// Their textual forms and their checks. The settings print and parse as
// `key = value` pairs under the config block's own key names; a schedule
// as its steps, F3 for micro-batch 3's forward and B3 for its backward;
// F3.1 for its forward on the rank's model chunk 1 (interleaved schedules).
//
//===----------------------------------------------------------------------===//

#include "dialects/Whale/IR/WhaleOps.h"

#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/SmallSet.h"

using namespace mlir;
using namespace whale;

namespace {

/// A choice's spellings, in the enum's order, for error messages.
template <class E> std::string spellings(std::initializer_list<E> allowed) {
  std::string out;
  for (E e : allowed)
    out += (out.empty() ? "" : ", ") + stringifyEnum(e).str();
  return out;
}

/// Sets `out` to the choice `value` spells, if it is one of `allowed`;
/// else "" stays and the error names what it may be.
template <class E>
LogicalResult choose(std::optional<E> &out, StringRef key, StringRef value,
                     std::initializer_list<E> allowed,
                     function_ref<InFlightDiagnostic()> emitError) {
  std::optional<E> e = symbolizeEnum<E>(value);
  if (e && llvm::is_contained(allowed, *e)) {
    out = e;
    return success();
  }
  return emitError() << "setting '" << key
                     << "' must be one of: " << spellings(allowed) << ", not \""
                     << value << "\"";
}

/// The settings as their parts, so the parser can fill them by key.
struct SettingsParts {
  int64_t numMicroBatch = 0, numTaskGraph = 0, taskGraphSplit = 0,
          bucketBytes = 0, virtualStages = 0, gatherLayers = 0, shardGroup = 0;
  bool autoParallel = false, recompute = false, shardOptimizer = false,
       shardParameters = false, shardGradients = false;
  std::optional<PipelineSchedule> schedule;
  std::optional<BalanceKind> balance;
  std::optional<SplitMatmul> splitMatmul;
  std::optional<SplitRows> splitRows;
  std::optional<AmpMode> amp;
  std::optional<GradSync> gradSync;
  std::optional<GatherEvery> gatherEvery;

  int64_t *integer(StringRef key) {
    return key == "num_micro_batch"    ? &numMicroBatch
           : key == "num_task_graph"   ? &numTaskGraph
           : key == "task_graph_split" ? &taskGraphSplit
           : key == "bucket_bytes"     ? &bucketBytes
           : key == "virtual_stages"   ? &virtualStages
           : key == "gather_layers"    ? &gatherLayers
           : key == "shard_group"      ? &shardGroup
                                       : nullptr;
  }
  bool *flag(StringRef key) {
    return key == "auto_parallel"      ? &autoParallel
           : key == "recompute"        ? &recompute
           : key == "shard_optimizer"  ? &shardOptimizer
           : key == "shard_parameters" ? &shardParameters
           : key == "shard_gradients"  ? &shardGradients
                                       : nullptr;
  }
  static bool isChoice(StringRef key) {
    return llvm::is_contained({"schedule", "balance", "split_matmul",
                               "split_rows", "amp", "grad_sync",
                               "gather_every"},
                              key);
  }
  /// Sets the choice `key` (isChoice) from its spelling.
  LogicalResult choice(StringRef key, StringRef value,
                       function_ref<InFlightDiagnostic()> emitError) {
    using P = PipelineSchedule;
    if (key == "schedule")
      return choose(schedule, key, value, {P::gpipe, P::one_f_one_b},
                    emitError);
    if (key == "balance") // "given" is the planner's word, not a request
      return choose(balance, key, value,
                    {BalanceKind::even, BalanceKind::hardware}, emitError);
    if (key == "split_matmul")
      return choose(splitMatmul, key, value,
                    {SplitMatmul::automatic, SplitMatmul::column,
                     SplitMatmul::row, SplitMatmul::replicated},
                    emitError);
    if (key == "split_rows")
      return choose(splitRows, key, value, {SplitRows::part, SplitRows::whole},
                    emitError);
    if (key == "amp")
      return choose(amp, key, value, {AmpMode::off, AmpMode::bf16}, emitError);
    if (key == "gather_every")
      return choose(gatherEvery, key, value,
                    {GatherEvery::micro_batch, GatherEvery::step}, emitError);
    return choose(gradSync, key, value,
                  {GradSync::overlap, GradSync::after_backward}, emitError);
  }
  SettingsAttr get(function_ref<InFlightDiagnostic()> emitError,
                   MLIRContext *ctx) const {
    return SettingsAttr::getChecked(
        emitError, ctx, numMicroBatch, numTaskGraph, taskGraphSplit,
        bucketBytes, autoParallel, recompute, shardOptimizer, shardParameters,
        shardGradients, schedule, balance, splitMatmul, splitRows, amp,
        gradSync, virtualStages, gatherLayers, shardGroup, gatherEvery);
  }
};

} // namespace

LogicalResult SettingsAttr::verify(
    function_ref<InFlightDiagnostic()> emitError, int64_t numMicroBatch,
    int64_t numTaskGraph, int64_t taskGraphSplit, int64_t bucketBytes, bool,
    bool, bool shardOptimizer, bool shardParameters, bool shardGradients,
    std::optional<PipelineSchedule>, std::optional<BalanceKind> balance,
    std::optional<SplitMatmul>, std::optional<SplitRows>,
    std::optional<AmpMode>, std::optional<GradSync>, int64_t virtualStages,
    int64_t gatherLayers, int64_t shardGroup,
    std::optional<GatherEvery> gatherEvery) {
  for (auto [key, v] :
       {std::pair<StringRef, int64_t>{"num_micro_batch", numMicroBatch},
        {"num_task_graph", numTaskGraph},
        {"task_graph_split", taskGraphSplit},
        {"bucket_bytes", bucketBytes},
        {"virtual_stages", virtualStages},
        {"gather_layers", gatherLayers},
        {"shard_group", shardGroup}})
    if (v < 0)
      return emitError() << "setting '" << key
                         << "' must be a positive integer, not " << v;
  if (balance == BalanceKind::given)
    return emitError() << "setting 'balance' must be one of: even, hardware, "
                          "not \"given\"";
  if (gatherLayers > 1 && !shardParameters)
    return emitError() << "setting 'gather_layers' needs shard_parameters = "
                          "true: only sharded parameters are gathered";
  if (gatherEvery && !shardParameters)
    return emitError() << "setting 'gather_every' needs shard_parameters = "
                          "true: only sharded parameters are gathered";
  if (shardGroup > 0 && !shardOptimizer && !shardParameters && !shardGradients)
    return emitError() << "setting 'shard_group' needs shard_optimizer, "
                          "shard_gradients or shard_parameters = true: only "
                          "sharded state is sharded in groups";
  return success();
}

Attribute SettingsAttr::parse(AsmParser &p, Type) {
  SettingsParts s;
  llvm::SmallSet<std::string, 8> seen;
  SMLoc start = p.getCurrentLocation();
  if (p.parseLess())
    return {};
  if (failed(p.parseOptionalGreater())) {
    do {
      SMLoc at = p.getCurrentLocation();
      std::string key;
      if (p.parseKeywordOrString(&key) || p.parseEqual())
        return {};
      if (!seen.insert(key).second) {
        p.emitError(at) << "setting '" << key << "' is given twice";
        return {};
      }
      if (int64_t *i = s.integer(key)) {
        if (p.parseInteger(*i))
          return {};
        if (*i < 1) {
          p.emitError(at) << "setting '" << key
                          << "' must be a positive integer";
          return {};
        }
      } else if (bool *b = s.flag(key)) {
        StringRef word;
        if (failed(p.parseOptionalKeyword(&word)) ||
            (word != "true" && word != "false")) {
          p.emitError(at) << "setting '" << key << "' must be true or false";
          return {};
        }
        *b = word == "true";
      } else if (SettingsParts::isChoice(key)) {
        std::string value;
        if (p.parseString(&value) ||
            failed(s.choice(key, value, [&] { return p.emitError(start); })))
          return {};
      } else {
        p.emitError(at) << "unknown setting '" << key
                        << "'; the settings are num_micro_batch, "
                           "num_task_graph, task_graph_split, bucket_bytes, "
                           "auto_parallel, recompute, shard_optimizer, "
                           "shard_parameters, shard_gradients, schedule, "
                           "balance, split_matmul, "
                           "split_rows, amp, "
                           "grad_sync, virtual_stages, gather_layers, "
                           "shard_group, gather_every";
        return {};
      }
    } while (succeeded(p.parseOptionalComma()));
    if (p.parseGreater())
      return {};
  }
  auto emit = [&] { return p.emitError(start); };
  return s.get(emit, p.getContext());
}

void SettingsAttr::print(AsmPrinter &p) const {
  SmallVector<std::string> parts;
  auto integer = [&](StringRef key, int64_t v) {
    if (v)
      parts.push_back((key + " = " + Twine(v)).str());
  };
  auto flag = [&](StringRef key, bool v) {
    if (v)
      parts.push_back((key + " = true").str());
  };
  auto text = [&](StringRef key, auto v) {
    if (v)
      parts.push_back((key + " = \"" + stringifyEnum(*v) + "\"").str());
  };
  integer("num_micro_batch", getNumMicroBatch());
  integer("num_task_graph", getNumTaskGraph());
  integer("task_graph_split", getTaskGraphSplit());
  integer("bucket_bytes", getBucketBytes());
  flag("auto_parallel", getAutoParallel());
  flag("recompute", getRecompute());
  flag("shard_optimizer", getShardOptimizer());
  flag("shard_parameters", getShardParameters());
  flag("shard_gradients", getShardGradients());
  text("schedule", getSchedule());
  text("balance", getBalance());
  text("split_matmul", getSplitMatmul());
  text("split_rows", getSplitRows());
  text("amp", getAmp());
  text("grad_sync", getGradSync());
  integer("virtual_stages", getVirtualStages());
  integer("gather_layers", getGatherLayers());
  integer("shard_group", getShardGroup());
  text("gather_every", getGatherEvery());
  p << "<";
  llvm::interleaveComma(parts, p);
  p << ">";
}

SettingsAttr
SettingsAttr::fromDictionary(DictionaryAttr config,
                             function_ref<InFlightDiagnostic()> emitError) {
  SettingsParts s;
  for (NamedAttribute entry : config) {
    StringRef key = entry.getName().getValue();
    Attribute value = entry.getValue();
    if (int64_t *i = s.integer(key); i && isa<IntegerAttr>(value)) {
      *i = cast<IntegerAttr>(value).getInt();
    } else if (bool *b = s.flag(key); b && isa<BoolAttr>(value)) {
      *b = cast<BoolAttr>(value).getValue();
    } else if (SettingsParts::isChoice(key) && isa<StringAttr>(value)) {
      if (failed(s.choice(key, cast<StringAttr>(value).getValue(), emitError)))
        return {};
    } else {
      emitError() << "setting '" << key << "' is unknown or not " << value;
      return {};
    }
  }
  return s.get(emitError, config.getContext());
}

LogicalResult
ScheduleAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                     ArrayRef<ScheduleStep> steps) {
  // Per chunk: forwards in order 0, 1, ...; backwards likewise, each after
  // its forward; as many of each, and every chunk the same micro-batches.
  // (Between chunks the order is the pipeline's: chunk c + 1's forward of a
  // micro-batch waits on another rank's chunk c, which no one stage's
  // schedule can check.)
  SmallVector<int64_t> forwards, backwards;
  for (const ScheduleStep &s : steps) {
    if (s.chunk < 0 || s.microBatch < 0)
      return emitError() << "schedule step " << s.str() << " is negative";
    if (s.chunk >= static_cast<int64_t>(forwards.size())) {
      forwards.resize(s.chunk + 1, 0);
      backwards.resize(s.chunk + 1, 0);
    }
    int64_t &next = s.backward ? backwards[s.chunk] : forwards[s.chunk];
    ScheduleStep expected{s.backward, next, s.chunk};
    if (s.microBatch != next)
      return emitError() << "schedule step " << s.str() << " comes where "
                         << expected.str()
                         << " belongs: each micro-batch's forwards and "
                            "backwards run in order";
    if (s.backward && s.microBatch >= forwards[s.chunk])
      return emitError() << "schedule step " << s.str()
                         << " comes before its forward";
    ++next;
  }
  for (size_t c = 0; c < forwards.size(); ++c) {
    if (forwards[c] != backwards[c])
      return emitError() << "schedule has " << forwards[c] << " forwards but "
                         << backwards[c] << " backwards"
                         << (forwards.size() > 1
                                 ? " on chunk " + std::to_string(c)
                                 : std::string());
    if (forwards[c] != forwards[0])
      return emitError() << "schedule runs " << forwards[0]
                         << " micro-batches on chunk 0 but " << forwards[c]
                         << " on chunk " << c;
  }
  return success();
}

Attribute ScheduleAttr::parse(AsmParser &p, Type) {
  SMLoc start = p.getCurrentLocation();
  SmallVector<ScheduleStep> steps;
  if (p.parseLess())
    return {};
  StringRef word;
  while (succeeded(p.parseOptionalKeyword(&word))) {
    int64_t j = 0, chunk = 0;
    auto [batch, chunkText] = word.drop_front().split('.');
    if (word.size() < 2 || (word.front() != 'F' && word.front() != 'B') ||
        batch.getAsInteger(10, j) ||
        (word.contains('.') && chunkText.getAsInteger(10, chunk))) {
      p.emitError(p.getCurrentLocation())
          << "expected a schedule step such as F0, B3 or F2.1 (micro-batch "
             "2 of chunk 1), got '"
          << word << "'";
      return {};
    }
    steps.push_back({word.front() == 'B', j, chunk});
  }
  if (p.parseGreater())
    return {};
  auto emit = [&] { return p.emitError(start); };
  return getChecked(function_ref<InFlightDiagnostic()>(emit), p.getContext(),
                    ArrayRef<ScheduleStep>(steps));
}

void ScheduleAttr::print(AsmPrinter &p) const {
  p << "<";
  llvm::interleave(
      getSteps(), p, [&](const ScheduleStep &s) { p << s.str(); }, " ");
  p << ">";
}
