//===- PlanState.cpp - the state a plan's ranks hold, as boxes ------------===//

#include "runtime/state/PlanState.h"

#include "runtime/WhaleRuntime.h"
#include "runtime/checkpoint/Checkpoint.h"
#include "runtime/core/Parts.h"

#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <tuple>

namespace whale {

bool planState(const PlanGrid &plan, StateCollection &out, std::string &error) {
  out = StateCollection();
  out.model = plan.model;
  // Rank s * replicas + r: stage s, replica r, on the grid's device.
  for (int64_t s = 0; s < plan.stages; ++s)
    for (int64_t r = 0; r < plan.replicas; ++r) {
      int64_t d = plan.grid.empty() ? r : plan.grid[s * plan.replicas + r];
      if (d < 0 || size_t(d) >= plan.devices.size()) {
        error = "the plan places a rank on device " + std::to_string(d) +
                ", which the cluster does not have";
        return false;
      }
      out.ranks.push_back(plan.devices[d]);
    }
  std::map<std::string, size_t> at; // tensor name -> index
  auto tensor = [&](const std::string &name,
                    const std::vector<int64_t> &shape) -> StateTensor & {
    auto [it, fresh] = at.try_emplace(name, out.tensors.size());
    if (fresh) // parameters and their optimizer state are fp32
      out.tensors.push_back({name, shape, sizeof(float), {}});
    return out.tensors[it->second];
  };
  for (int64_t s = 0; s < plan.stages; ++s)
    for (int64_t r = 0; r < plan.replicas; ++r) {
      const int64_t rank = s * plan.replicas + r;
      for (const Parameter &p : plan.program(s, r).params) {
        Box box = wholeBox(p.shape);
        if (p.axis >= 0) {
          rt::PartRange part;
          if (size_t(p.axis) >= p.shape.size() ||
              !rt::partOf(p.shape[p.axis], p.shards,
                          p.weights.empty() ? nullptr : p.weights.data(),
                          r % p.shards, part)) {
            error = "parameter '" + p.name +
                    "' cannot be cut into its shard group's parts";
            return false;
          }
          box.offset[p.axis] = part.offset;
          box.size[p.axis] = part.size;
        }
        // A parameter sharded over the replicas (shard_parameters) lives
        // on its owner alone.
        if (p.holdsValue(r))
          tensor(p.name, p.shape).holders.push_back({rank, box});
        // Optimizer state sharded over a group (shard_optimizer): a
        // parameter's state lives on its owner alone.
        for (int k = 0; k < (p.holdsState(r) ? plan.stateCount : 0); ++k)
          tensor(p.name + ".optimizer_" + std::to_string(k), p.shape)
              .holders.push_back({rank, box});
      }
      // What every rank keeps besides: the step (the data position and the
      // learning-rate schedule follow from it) and the seed.
      for (const char *scalar : {"step", "seed"}) {
        StateTensor &t = tensor(scalar, {});
        t.elementBytes = 8;
        t.holders.push_back({rank, Box{}});
      }
    }
  return true;
}

std::vector<RankPlace> manifestPlaces(const PlanManifest &m) {
  std::vector<RankPlace> out;
  for (const RankDevice &d : m.devices)
    out.push_back({d.place, d.node});
  return out;
}

bool manifestState(const PlanManifest &m, StateCollection &out,
                   std::string &error) {
  const PlanGrid grid{m.model,
                      m.stages,
                      m.replicas,
                      m.grid,
                      manifestPlaces(m),
                      m.settings.stateCount,
                      [&](int64_t s, int64_t r) -> const StageProgram & {
                        return m.program(s, r);
                      }};
  return planState(grid, out, error);
}

std::string rankTensorName(const std::string &name, int &state) {
  state = -1;
  size_t at = name.rfind(".optimizer_");
  if (at == std::string::npos)
    return name;
  state = std::atoi(name.c_str() + at + 11);
  return name.substr(0, at);
}

std::string
extractState(const StateCollection &layout, int64_t step, uint64_t seed,
             const ReshardPlan &reshard, const StateCollection &next,
             const std::function<whale_rt_context *(int64_t rank)> &contextOf,
             HeldState &held) {
  // Only the boxes some piece reads (of one replica, where the others hold
  // the same).
  std::set<std::tuple<int64_t, std::string, Box>> read;
  for (const ReshardPiece &p : reshard.pieces)
    read.insert({p.from, next.tensors[p.tensor].name, p.held});
  for (const StateTensor &t : layout.tensors) {
    if (t.shape.empty()) { // the step and the seed, as the driver has them
      int64_t value = t.name == "seed" ? static_cast<int64_t>(seed) : step;
      std::vector<uint8_t> bytes(sizeof value);
      std::memcpy(bytes.data(), &value, sizeof value);
      for (const auto &[rank, box] : t.holders)
        if (read.count({rank, t.name, box}))
          held[{rank, t.name}][box] = bytes;
      continue;
    }
    int state = -1;
    std::string name = rankTensorName(t.name, state);
    for (const auto &[rank, box] : t.holders) {
      whale_rt_context *ctx = contextOf(rank);
      if (!ctx || !read.count({rank, t.name, box}))
        continue;
      if (std::string err = readRankTensor(ctx, name, box.size, state,
                                           held[{rank, t.name}][box]);
          !err.empty())
        return err;
    }
  }
  return "";
}

std::string
injectState(const HeldState &held,
            const std::function<whale_rt_context *(int64_t rank)> &contextOf) {
  for (const auto &[key, boxes] : held) {
    const auto &[rank, tensorName] = key;
    whale_rt_context *ctx = contextOf(rank);
    if (!ctx)
      continue; // another process's rank
    int state = -1;
    std::string name = rankTensorName(tensorName, state);
    for (const auto &[box, bytes] : boxes)
      if (!box.size.empty())
        if (std::string err =
                writeRankTensor(ctx, name, box.size, state, bytes);
            !err.empty())
          return err;
  }
  return "";
}

} // namespace whale
