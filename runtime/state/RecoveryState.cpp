//===- RecoveryState.cpp - the state a run goes on from after a failure ---===//

#include "runtime/state/RecoveryState.h"

#include "runtime/state/PlanState.h"

#include <algorithm>
#include <map>

namespace whale {

std::string takeOwnBoxes(const StateCollection &layout, int64_t step,
                         uint64_t seed, const LocalRanks &ranks,
                         HeldState &into) {
  ReshardPlan own;
  std::string error;
  if (!planReshard(layout, layout, own, error))
    return error;
  return extractState(layout, step, seed, own, layout, ranks.contextOf, into);
}

std::string keepInStore(StateStore &store, const StateCollection &layout,
                        int64_t version, int64_t step, uint64_t seed,
                        const LocalRanks &ranks) {
  if (std::string err = takeOwnBoxes(layout, step, seed, ranks,
                                     store.prepare(layout, version));
      !err.empty()) {
    store.invalidate();
    return err;
  }
  store.commit(step);
  return "";
}

std::string checkpointState(const std::string &path, int64_t saved,
                            const std::string &why, SurvivingState &out,
                            const std::set<int64_t> *only) {
  if (saved < 0)
    return why + ", and this run has saved no checkpoint (save_every with "
                 "--save)";
  StateCheckpoint checkpoint;
  if (std::string err = loadStateCheckpoint(path, checkpoint, only);
      !err.empty())
    return why + ", and the checkpoint cannot be read: " + err;
  out.layout = std::move(checkpoint.layout);
  out.held = std::move(checkpoint.held);
  out.step = checkpoint.nextStep;
  out.source = "checkpoint " + path;
  return "";
}

std::string survivingState(StateStore &store, int64_t lost,
                           const std::string &path, int64_t saved,
                           SurvivingState &out) {
  // The newer of the two; memory when they are of one step.
  std::string why = store.step() < 0 ? "no copy of the state is kept in "
                                       "memory (--replicate-every)"
                    : store.step() < saved
                        ? "the copy in memory is older than the last "
                          "checkpoint"
                        : "";
  if (why.empty() && store.surviving(lost, out.layout, out.held, why)) {
    out.step = store.step();
    out.source = "memory";
    return "";
  }
  return checkpointState(path, saved, why, out);
}

std::string runsOnSurvivors(const std::vector<RankDevice> &needed,
                            const std::vector<RankDevice> &left) {
  auto isCpu = [](const RankDevice &d) { return d.name.rfind("cpu:", 0) == 0; };
  std::map<std::string, int64_t> cpus; // per node, CPU devices left
  for (const RankDevice &d : left)
    if (isCpu(d))
      ++cpus[d.node];
  for (const RankDevice &d : needed) {
    if (isCpu(d)) {
      if (cpus[d.node]-- <= 0)
        return "it needs more CPU devices on " + d.node + " than are left";
      continue;
    }
    if (std::none_of(left.begin(), left.end(), [&](const RankDevice &l) {
          return l.node == d.node && l.name == d.name;
        }))
      return "it needs " + d.name + " on " + d.node + ", which is not left";
  }
  return "";
}

} // namespace whale
