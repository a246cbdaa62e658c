//===- Search.h - the best plan for a script on a cluster ---------*- C++
//-*-===//
//
// What `whale search` does: enumerates the plans a script's model can take
// on a cluster (data, tensor and pipeline degrees, shard groups sharing
// rows or not, micro-batches, schedule, balanced or even shares, activation
// recomputation), each as the config keys that ask for it
// (auto_parallel cuts the model into pipeline stages of split TaskGraphs),
// prunes those that cannot fit or cannot win, plans and simulates the rest,
// and ranks them by predicted iteration time. The fastest plans with data
// parallelism are then tried once more with their gradient sums after the
// backward instead of during it. The script's own annotations are one more
// candidate, so a user sees where their plan stands.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_LIB_PERF_SEARCH_H
#define WHALE_LIB_PERF_SEARCH_H

#include "dialects/Whale/IR/WhaleDialect.h"
#include "whale/Interpreter.h"

#include <functional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace whale {

struct Cluster;
namespace sim {
class ProfileDb;
}

/// The least a pipeline of p stages, m equal micro-batches and v chunks a
/// stage can take over its micro-batches' work spread evenly over its
/// stages (m W / p, W the work of one micro-batch on all stages), whatever
/// its cut. Stage j cannot start before the first micro-batch's forward
/// has passed the stages before it, nor end before the last one's backward
/// has passed them back: T >= sum_{i<j} w_i + m w_j for each j. The cut
/// that makes the largest of these least has w_j falling as (1 - 1/m)^j,
/// and gives T >= W / (1 - (1 - 1/m)^p) (weigh constraint j by
/// (1 - 1/m)^(p-1-j) and add them up), so the factor is
/// p / (m (1 - (1 - 1/m)^p)): p for one micro-batch, 1 + (p - 1) / (2m)
/// or so for many. Equal stages would give (m + p - 1) / m, more, but an
/// uneven cut can beat it (two stages of 0.6 and 0.4 of W, two micro-
/// batches under 1F1B: 1.4 W against 1.5 W). With v > 1 chunks a stage,
/// what stage j waits for before its first op is the first chunks of the
/// stages before it, which a cut may leave all but empty: 1, nothing
/// proven beyond the even spread.
double pipelineStretch(int64_t microBatches, int64_t stages, int64_t chunks);

/// A config key and the value a candidate gives it, typed: the search
/// builds it from the dialect's enums, and it is spelled here only, for
/// the two places a person reads or types it.
struct ConfigChoice {
  std::string key;
  ConfigValue value; ///< as InterpreterOptions::configs takes it

  /// In config-block syntax: 4, true, "1f1b".
  std::string text() const;
  /// As `--config KEY=VALUE` spells it: 4, true, 1f1b.
  std::string flagValue() const { return configText(value); }
  bool operator==(const ConfigChoice &o) const {
    return key == o.key && value == o.value;
  }
};

/// One plan of the space, and what became of it.
struct SearchCandidate {
  /// The script as written (its own blocks and config), not a generated
  /// plan; its degrees below are read from its plan.
  bool asWritten = false;
  int64_t data = 1, tensor = 1, pipeline = 1, microBatches = 1;
  /// The pipeline's schedule; none without a pipeline.
  std::optional<PipelineSchedule> schedule;
  /// Model chunks a pipeline stage holds (virtual_stages): above 1 the
  /// schedule interleaves them.
  int64_t chunks = 1;
  bool even = false;    ///< equal shares whatever the devices
  bool recompute = false; ///< activation recomputation
  /// Parameters, gradients' sums and optimizer state sharded over the
  /// replicas (ZeRO stage 3, shard_parameters): tried where there are
  /// replicas, and set aside where the plan fits without it.
  bool shardParameters = false;
  /// Each micro-batch's gradients reduced to their owners, which alone
  /// keep the sums (ZeRO stage 2, shard_gradients): tried where replicas
  /// accumulate micro-batches, and set aside where the plan fits without
  /// it (with shardParameters: where stage 3 alone fits).
  bool shardGradients = false;
  /// Hybrid sharding (shard_group): with stage 2 or 3, sharded within
  /// groups of this many replicas of a stage, each group holding a copy
  /// (0: over all of them). Tried on clusters of several nodes, with the
  /// replicas a node holds (`nodeGroup`) as the group, between the plan
  /// sharding nothing and the one sharding over every replica.
  int64_t shardGroup = 0;
  /// The replicas of a stage one node holds, where a stage spans several
  /// nodes (0: none), which hybrid sharding groups by.
  int64_t nodeGroup = 0;
  /// A shard group's ranks read the same rows (split_rows = "whole",
  /// Megatron-LM's layout) instead of each its own.
  bool wholeRows = false;
  /// The gradient sums after the whole backward (grad_sync =
  /// "after_backward") instead of during it.
  bool afterBackward = false;

  enum class Outcome {
    Simulated,
    OverMemory, ///< the planner found no device able to hold its part
    Bound,      ///< its least possible time exceeds the K-th best found
    Dominated,  ///< fits without more micro-batches (no pipeline),
                ///< without recomputation or without sharding the
                ///< parameters or the gradients, which only cost time
    Failed      ///< the planner or the simulator refused it
  };
  Outcome outcome = Outcome::Failed;
  std::string reason; ///< why it was not simulated (first line)

  double iterationSeconds = 0, samplesPerSecond = 0, tokensPerSecond = 0;
  double mfu = 0, bubble = 0; ///< mfu < 0: a device's peak is not known
  /// The least time the candidate could take: its FLOPs at peak with the
  /// bubble, what a plan of its layout with a divisor of its micro-batches
  /// computed and transferred per device, or its cut's products through
  /// the pipeline (cutBound), whichever is most.
  double lowerBound = 0;
  /// The least its planned cut allows (cutBound, lib/perf/CutBound.h): known
  /// once the planning passes have cut it, before its rank programs are built;
  /// 0 where it proves nothing. Part of lowerBound.
  double cutBound = 0;
  int64_t peakMemory = 0; ///< the most any device holds (bytes)
  /// Per pipeline stage: its first and last parameter and its share of
  /// the parameters' bytes.
  std::vector<std::string> stages;

  /// The config keys that ask for this plan (empty for the script as
  /// written), by value.
  std::vector<ConfigChoice> config() const;
  /// What the planner is told for this plan: its config, and the defaults
  /// of what it leaves unsaid, whatever the script's config block says.
  std::vector<ConfigChoice> overrides() const;
  /// One line: "dp 4 x tp 2 x pp 1, 1 micro-batch".
  std::string label() const;
  /// The pipeline's fill and drain: pipelineStretch of its shape.
  double fillAndDrain() const {
    return pipelineStretch(microBatches, pipeline, chunks);
  }
};

struct SearchOptions {
  int top = 5;
  int defaultThreads = 1;
  /// Candidates planned side by side (0: one per core). The results, and
  /// the order they are told in, are the same for any count.
  int jobs = 0;
  const sim::ProfileDb *profile = nullptr;
  /// Set candidates aside by the least their planned cut allows (cutBound),
  /// before building their rank programs. Off, only the bounds known
  /// before planning prune (tests check those apart).
  bool boundByCut = true;
  /// Told each candidate as it is done (index from 1, count, candidate).
  std::function<void(size_t, size_t, const SearchCandidate &)> progress;
};

struct SearchResult {
  std::string model, script;
  int64_t devices = 0, globalBatch = 0;
  /// Every candidate: the simulated ones first, fastest first; then the
  /// others in the order they were considered.
  std::vector<SearchCandidate> candidates;
  double seconds = 0; ///< the whole search
  size_t count(SearchCandidate::Outcome o) const;
};

/// Searches the plans for the model with a train block of the script at
/// `file`, loaded with `options` (its defines and search path; its configs
/// are the base every candidate adds to), on `cluster`.
bool searchPlans(const std::string &file, const InterpreterOptions &options,
                 const Cluster &cluster, const SearchOptions &search,
                 SearchResult &out, std::string &error);

std::string searchText(const SearchResult &result, int top);
/// The same as JSON (docs/simulation.md lists the keys).
std::string searchJson(const SearchResult &result, int top);

} // namespace whale

#endif
