//===- SearchReport.cpp - what `whale search` shows -----------------------===//

#include "lib/perf/Search.h"

#include "runtime/core/Allocator.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

namespace whale {
namespace {

using Outcome = SearchCandidate::Outcome;

const char *outcomeName(Outcome o) {
  switch (o) {
  case Outcome::Simulated:
    return "simulated";
  case Outcome::OverMemory:
    return "over_memory";
  case Outcome::Bound:
    return "bound";
  case Outcome::Dominated:
    return "dominated";
  case Outcome::Failed:
    return "failed";
  }
  return "failed";
}

/// Seconds in the unit that suits them.
std::string timeText(double s) {
  if (s >= 1)
    return llvm::formatv("{0:F3} s", s).str();
  if (s >= 1e-3)
    return llvm::formatv("{0:F2} ms", s * 1e3).str();
  return llvm::formatv("{0:F1} us", s * 1e6).str();
}

size_t shown(const SearchResult &r, int top) {
  return std::min<size_t>(top, r.count(Outcome::Simulated));
}

} // namespace

std::string searchText(const SearchResult &r, int top) {
  std::string out;
  llvm::raw_string_ostream os(out);
  os << llvm::formatv(
      "search: model {0} on {1} devices, global batch {2}: {3} plans in "
      "{4:F2} s\n  simulated {5}, over memory {6}, past the bound {7}, "
      "dominated {8}, failed {9}\n\n",
      r.model, r.devices, r.globalBatch, r.candidates.size(), r.seconds,
      r.count(Outcome::Simulated), r.count(Outcome::OverMemory),
      r.count(Outcome::Bound), r.count(Outcome::Dominated),
      r.count(Outcome::Failed));
  // The plan column as wide as the longest label shown.
  size_t width = 56;
  for (size_t i = 0; i < shown(r, top); ++i)
    width = std::max(width, r.candidates[i].label().size());
  auto padded = [&](std::string s) {
    s.resize(std::max(s.size(), width), ' ');
    return s;
  };
  os << llvm::formatv("{0,4}  {1} {2,11} {3,12} {4,6} {5,7} {6,11}\n", "rank",
                      padded("plan"), "iteration", "samples/s", "MFU", "bubble",
                      "peak memory");
  for (size_t i = 0; i < shown(r, top); ++i) {
    const SearchCandidate &k = r.candidates[i];
    const std::string mfu =
        k.mfu >= 0 ? llvm::formatv("{0:F1}%", k.mfu * 100).str() : "-";
    os << llvm::formatv("{0,4}  {1} {2,11} {3,12:F1} {4,6} {5,6:F1}% {6,11}\n",
                        i + 1, padded(k.label()), timeText(k.iterationSeconds),
                        k.samplesPerSecond, mfu, k.bubble * 100,
                        rt::formatBytes(k.peakMemory));
  }
  for (const SearchCandidate &k : r.candidates)
    if (k.asWritten && k.outcome != Outcome::Simulated)
      os << "\nthe script as written: " << k.reason << "\n";
  const SearchCandidate &best = r.candidates.front();
  os << "\nfastest: " << best.label() << ", "
     << timeText(best.iterationSeconds) << " per iteration\n";
  if (best.asWritten) {
    os << "the script's own plan is the fastest found; keep it\n";
    return out;
  }
  os << "paste into the script (its replicate and split blocks are then set "
        "aside):\n\nconfig {\n";
  for (const ConfigChoice &c : best.config())
    os << "  " << c.key << " = " << c.text() << "\n";
  os << "}\n\nor try it unchanged with:";
  for (const ConfigChoice &c : best.config())
    os << " --config " << c.key << "=" << c.flagValue();
  os << "\n\n";
  for (auto [s, text] : llvm::enumerate(best.stages))
    os << "stage " << s << ": " << text << "\n";
  return out;
}

std::string searchJson(const SearchResult &r, int top) {
  auto candidate = [](const SearchCandidate &k) {
    llvm::json::Object config;
    for (const ConfigChoice &c : k.config())
      config[c.key] = std::visit(
          [](const auto &v) { return llvm::json::Value(v); }, c.value);
    llvm::json::Object o{
        {"label", k.label()},
        {"as_written", k.asWritten},
        {"data", k.data},
        {"tensor", k.tensor},
        {"pipeline", k.pipeline},
        {"micro_batches", k.microBatches},
        {"schedule", k.schedule ? stringifyPipelineSchedule(*k.schedule).str()
                                : std::string()},
        {"chunks", k.chunks},
        {"even", k.even},
        {"recompute", k.recompute},
        {"shard_parameters", k.shardParameters},
        {"shard_gradients", k.shardGradients},
        {"shard_group", k.shardGroup},
        {"whole_rows", k.wholeRows},
        {"grad_sync", k.afterBackward ? "after_backward" : "overlap"},
        {"outcome", outcomeName(k.outcome)},
        {"config", std::move(config)},
        {"lower_bound_s", k.lowerBound},
        {"cut_bound_s", k.cutBound}};
    if (k.outcome == Outcome::Simulated) {
      o["iteration_s"] = k.iterationSeconds;
      o["samples_per_s"] = k.samplesPerSecond;
      o["tokens_per_s"] = k.tokensPerSecond;
      o["mfu"] =
          k.mfu >= 0 ? llvm::json::Value(k.mfu) : llvm::json::Value(nullptr);
      o["bubble_fraction"] = k.bubble;
      o["peak_memory"] = k.peakMemory;
      o["stages"] = llvm::json::Array(k.stages);
    } else {
      o["reason"] = k.reason;
    }
    return llvm::json::Value(std::move(o));
  };
  llvm::json::Array topList, others;
  for (size_t i = 0; i < r.candidates.size(); ++i)
    (i < shown(r, top) ? topList : others).push_back(candidate(r.candidates[i]));
  llvm::json::Object counts;
  for (Outcome o : {Outcome::Simulated, Outcome::OverMemory, Outcome::Bound,
                    Outcome::Dominated, Outcome::Failed})
    counts[outcomeName(o)] = static_cast<int64_t>(r.count(o));
  llvm::json::Object root{{"version", 1},
                          {"model", r.model},
                          {"devices", r.devices},
                          {"global_batch", r.globalBatch},
                          {"plans", static_cast<int64_t>(r.candidates.size())},
                          {"counts", std::move(counts)},
                          {"search_s", r.seconds},
                          {"top", std::move(topList)},
                          {"others", std::move(others)}};
  std::string out;
  llvm::raw_string_ostream os(out);
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(root))) << "\n";
  return out;
}

} // namespace whale
