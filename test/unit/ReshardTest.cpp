//===- ReshardTest.cpp - the delta between two state collections ----------===//
//
// Random tensors cut into random boxes held by random ranks on random
// devices, before and after: applying the plan's pieces to copies of the
// old ranks' boxes must rebuild every new rank's box exactly, each element
// written once; a piece moves only what the destination's device does not
// hold; and what moves is the lower bound. Then plans of real scripts.
//
//===----------------------------------------------------------------------===//

#include "runtime/state/Reshard.h"
#include "lib/compile/Cluster.h"
#include "lib/compile/Planner.h"
#include "lib/elastic/StateCollection.h"
#include "runtime/state/ProcessStore.h"
#include "runtime/state/StateStore.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

namespace {

using whale::Box;

/// Cuts [0, extent) at `parts - 1` random points.
std::vector<std::pair<int64_t, int64_t>> randomRanges(std::mt19937 &rng,
                                                      int64_t extent) {
  std::uniform_int_distribution<int64_t> parts(1, std::min<int64_t>(extent, 4));
  int64_t n = parts(rng);
  std::vector<int64_t> cuts = {0, extent};
  std::uniform_int_distribution<int64_t> at(1, extent - 1);
  while (static_cast<int64_t>(cuts.size()) < n + 1 && extent > 1) {
    int64_t c = at(rng);
    if (std::find(cuts.begin(), cuts.end(), c) == cuts.end())
      cuts.push_back(c);
  }
  std::sort(cuts.begin(), cuts.end());
  std::vector<std::pair<int64_t, int64_t>> out;
  for (size_t i = 0; i + 1 < cuts.size(); ++i)
    out.push_back({cuts[i], cuts[i + 1] - cuts[i]});
  return out;
}

/// A collection of `ranks` ranks on devices of `devices` (two nodes) in
/// which every tensor is tiled by random boxes, each held by 1-3 ranks.
whale::StateCollection randomCollection(
    std::mt19937 &rng, const std::vector<std::vector<int64_t>> &shapes,
    int ranks, int devices) {
  whale::StateCollection c;
  c.model = "m";
  std::uniform_int_distribution<int> device(0, devices - 1);
  for (int r = 0; r < ranks; ++r) {
    int d = device(rng);
    c.ranks.push_back({"n" + std::to_string(d % 2) + "/cpu:" +
                           std::to_string(d),
                       "n" + std::to_string(d % 2)});
  }
  std::uniform_int_distribution<int> rank(0, ranks - 1), copies(1, 3);
  for (size_t t = 0; t < shapes.size(); ++t) {
    whale::StateTensor tensor{"t" + std::to_string(t), shapes[t], 4, {}};
    // The grid of per-axis ranges tiles the tensor.
    std::vector<std::vector<std::pair<int64_t, int64_t>>> ranges;
    for (int64_t e : shapes[t])
      ranges.push_back(randomRanges(rng, e));
    std::vector<size_t> at(shapes[t].size(), 0);
    while (true) {
      Box box;
      for (size_t d = 0; d < at.size(); ++d) {
        box.offset.push_back(ranges[d][at[d]].first);
        box.size.push_back(ranges[d][at[d]].second);
      }
      // Distinct ranks hold a box (a rank may hold several boxes).
      std::set<int> who;
      for (int k = std::min(copies(rng), ranks); k > 0; --k) {
        int r = rank(rng);
        while (who.count(r))
          r = (r + 1) % ranks;
        who.insert(r);
        tensor.holders.push_back({r, box});
      }
      size_t d = at.size();
      while (d > 0 && ++at[d - 1] >= ranges[d - 1].size())
        at[--d] = 0;
      if (d == 0)
        break;
    }
    c.tensors.push_back(tensor);
  }
  return c;
}

/// The index of an element of `shape` at `coords`.
int64_t linear(const std::vector<int64_t> &shape,
               const std::vector<int64_t> &coords) {
  int64_t i = 0;
  for (size_t d = 0; d < shape.size(); ++d)
    i = i * shape[d] + coords[d];
  return i;
}

/// Calls f(coords) for each element of `box`.
template <class F> void forEach(const Box &box, F &&f) {
  if (box.elements() == 0)
    return;
  std::vector<int64_t> c(box.offset);
  while (true) {
    f(c);
    size_t d = c.size();
    while (d > 0 && ++c[d - 1] >= box.offset[d - 1] + box.size[d - 1]) {
      c[d - 1] = box.offset[d - 1];
      --d;
    }
    if (d == 0)
      break;
  }
}

bool contains(const Box &outer, const std::vector<int64_t> &c) {
  for (size_t d = 0; d < c.size(); ++d)
    if (c[d] < outer.offset[d] || c[d] >= outer.offset[d] + outer.size[d])
      return false;
  return true;
}

TEST(Reshard, RandomPlansRebuildEveryNewBoxExactly) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    SCOPED_TRACE(trial);
    std::uniform_int_distribution<int64_t> extent(1, 9), dims(0, 3);
    std::vector<std::vector<int64_t>> shapes(3);
    for (auto &s : shapes)
      for (int64_t d = dims(rng); d > 0; --d)
        s.push_back(extent(rng));
    std::uniform_int_distribution<int> ranks(1, 6), devices(1, 6);
    whale::StateCollection from =
        randomCollection(rng, shapes, ranks(rng), devices(rng));
    whale::StateCollection to =
        randomCollection(rng, shapes, ranks(rng), devices(rng));
    whale::ReshardPlan plan;
    std::string error;
    ASSERT_TRUE(whale::planReshard(from, to, plan, error)) << error;
    // Each new holder's box, rebuilt from the pieces: the element's global
    // index where a piece wrote it, and how many times.
    int64_t moved = 0;
    for (size_t t = 0; t < to.tensors.size(); ++t) {
      const whale::StateTensor &want = to.tensors[t];
      std::map<std::pair<int64_t, int64_t>, int> writes; // (rank, element)
      for (const whale::ReshardPiece &p : plan.pieces) {
        if (p.tensor != t)
          continue;
        // The source holds the piece, and the destination needs it.
        auto inside = [&](const Box &outer) {
          std::optional<Box> i = whale::intersect(outer, p.box);
          return i && *i == p.box;
        };
        bool held = inside(p.held), needed = inside(p.needed);
        held = held && std::count(from.tensors[t].holders.begin(),
                                  from.tensors[t].holders.end(),
                                  std::make_pair(p.from, p.held));
        needed = needed && std::count(want.holders.begin(), want.holders.end(),
                                      std::make_pair(p.to, p.needed));
        EXPECT_TRUE(held) << p.box.str() << " from rank " << p.from;
        EXPECT_TRUE(needed) << p.box.str() << " to rank " << p.to;
        bool same = from.ranks[p.from].device == to.ranks[p.to].device;
        EXPECT_EQ(p.route == whale::Route::Stays, same);
        if (!same)
          moved += p.bytes;
        forEach(p.box, [&](const std::vector<int64_t> &c) {
          ++writes[{p.to, linear(want.shape, c)}];
          // Nothing moves that the destination's device already holds.
          if (!same) {
            for (const auto &[r, box] : from.tensors[t].holders) {
              EXPECT_FALSE(from.ranks[r].device == to.ranks[p.to].device &&
                           contains(box, c));
            }
          }
        });
      }
      for (const auto &[r, box] : want.holders)
        forEach(box, [&](const std::vector<int64_t> &c) {
          EXPECT_EQ((writes[{r, linear(want.shape, c)}]), 1)
              << want.name << " rank " << r;
        });
    }
    EXPECT_EQ(moved, plan.movedBytes());
    EXPECT_EQ(plan.movedBytes(), plan.lowerBoundBytes);
  }
}

TEST(Reshard, MissingStateOrAnotherShapeIsAnError) {
  whale::StateCollection a, b;
  a.ranks = b.ranks = {{"n/cpu:0", "n"}};
  a.tensors = {{"w", {4}, 4, {{0, whale::wholeBox({4})}}}};
  b.tensors = {{"w", {5}, 4, {{0, whale::wholeBox({5})}}}};
  whale::ReshardPlan plan;
  std::string error;
  EXPECT_FALSE(whale::planReshard(a, b, plan, error));
  EXPECT_NE(error.find("'w' is [4] in the old plan and [5] in the new"),
            std::string::npos)
      << error;
  b.tensors = {{"v", {4}, 4, {{0, whale::wholeBox({4})}}}};
  EXPECT_FALSE(whale::planReshard(a, b, plan, error));
  EXPECT_NE(error.find("'v' is not in the old plan"), std::string::npos);
  // Half of w held by nobody before.
  a.tensors = {{"w", {4}, 4, {{0, Box{{0}, {2}}}}}};
  b.tensors = {{"w", {4}, 4, {{0, whale::wholeBox({4})}}}};
  EXPECT_FALSE(whale::planReshard(a, b, plan, error));
  EXPECT_NE(error.find("no rank of the old plan holds [2:4] of 'w'"),
            std::string::npos)
      << error;
}

/// The state collection of `script` planned on `spec` (with `configs`).
whale::StateCollection
stateOfScript(const std::string &script, const std::string &spec,
              const std::map<std::string, whale::ConfigValue> &configs = {}) {
  whale::Cluster cluster;
  std::string error;
  EXPECT_TRUE(whale::parseCluster(spec, cluster, error)) << error;
  whale::InterpreterOptions options;
  options.configs = configs;
  whale::Interpreter interp(options);
  EXPECT_TRUE(interp.loadFile(std::string(WHALE_SOURCE_DIR) + "/" + script))
      << interp.renderDiagnostics();
  whale::PlannedModel plan;
  EXPECT_TRUE(whale::planModel(interp, "", cluster, {}, plan, error)) << error;
  whale::StateCollection state;
  EXPECT_TRUE(whale::stateOf(plan, cluster, state, error)) << error;
  return state;
}

TEST(Reshard, DataParallelToFewerDevicesMovesNothing) {
  whale::StateCollection four = stateOfScript("examples/mlp.whl", "cpu:4");
  whale::StateCollection two = stateOfScript("examples/mlp.whl", "cpu:2");
  ASSERT_EQ(four.ranks.size(), 4u);
  // Parameters, Adam's two moments each, the step and the seed.
  EXPECT_EQ(four.tensors.size(), 4u * 3 + 2);
  for (const whale::StateTensor &t : four.tensors)
    EXPECT_EQ(t.holders.size(), 4u) << t.name;
  whale::ReshardPlan plan;
  std::string error;
  ASSERT_TRUE(whale::planReshard(four, two, plan, error)) << error;
  EXPECT_EQ(plan.movedBytes(), 0);
  EXPECT_EQ(plan.stayBytes, two.heldBytes());
}

TEST(Reshard, TensorParallelFourToTwoMovesWhatTheDevicesLack) {
  whale::StateCollection four =
      stateOfScript("test/equivalence/mlp_split.whl", "cpu:4");
  whale::StateCollection two =
      stateOfScript("test/equivalence/mlp_split.whl", "cpu:2");
  whale::ReshardPlan plan;
  std::string error;
  ASSERT_TRUE(whale::planReshard(four, two, plan, error)) << error;
  // Each new rank holds half of each split tensor. Device 0 held the
  // first quarter of the first half it now needs; device 1 held the second
  // quarter, none of the second half it now needs: three quarters move.
  int64_t split = 0;
  for (const whale::StateTensor &t : two.tensors)
    if (t.holders.size() == 2 && !(t.holders[0].second == t.holders[1].second))
      split += whale::wholeBox(t.shape).elements() * t.elementBytes;
  EXPECT_GT(split, 0);
  EXPECT_EQ(plan.movedBytes(), split * 3 / 4);
  EXPECT_EQ(plan.movedBytes(), plan.lowerBoundBytes);
  EXPECT_EQ(plan.acrossNodeBytes, 0);
}

/// Every tensor of `c` as random bytes, whole; and each rank's boxes cut
/// from them.
std::map<std::string, std::vector<uint8_t>>
randomWholes(const whale::StateCollection &c, std::mt19937 &rng) {
  std::map<std::string, std::vector<uint8_t>> out;
  std::uniform_int_distribution<int> byte(0, 255);
  for (const whale::StateTensor &t : c.tensors) {
    std::vector<uint8_t> &v = out[t.name];
    v.resize(whale::wholeBox(t.shape).elements() * t.elementBytes);
    for (uint8_t &b : v)
      b = static_cast<uint8_t>(byte(rng));
  }
  return out;
}

whale::HeldState
cutFrom(const whale::StateCollection &c,
        const std::map<std::string, std::vector<uint8_t>> &wholes) {
  whale::HeldState held;
  for (const whale::StateTensor &t : c.tensors) {
    Box whole = whale::wholeBox(t.shape);
    for (const auto &[rank, box] : t.holders) {
      std::vector<uint8_t> &v = held[{rank, t.name}][box];
      v.resize(box.elements() * t.elementBytes);
      whale::copyBox(wholes.at(t.name).data(), whole, v.data(), box, box,
                     t.elementBytes);
    }
  }
  return held;
}

/// Moves the state through each plan in turn and back to the first: every
/// step's boxes are the wholes' bytes, and the round trip is bit-exact.
void expectRoundTrip(const std::vector<whale::StateCollection> &plans) {
  std::mt19937 rng(11);
  auto wholes = randomWholes(plans.front(), rng);
  whale::HeldState held = cutFrom(plans.front(), wholes);
  for (size_t i = 1; i <= plans.size(); ++i) {
    const whale::StateCollection &from = plans[i - 1],
                                 &to = plans[i % plans.size()];
    SCOPED_TRACE("plan " + std::to_string(i - 1) + " -> " +
                 std::to_string(i % plans.size()));
    whale::ReshardPlan plan;
    std::string error;
    ASSERT_TRUE(whale::planReshard(from, to, plan, error)) << error;
    EXPECT_EQ(plan.movedBytes(), plan.lowerBoundBytes);
    whale::HeldState next;
    ASSERT_TRUE(whale::applyReshard(to, plan, held, next, error)) << error;
    EXPECT_TRUE(next == cutFrom(to, wholes));
    held = std::move(next);
  }
  EXPECT_TRUE(held == cutFrom(plans.front(), wholes));
}

TEST(Reshard, DataParallelFourTwoEightRoundTripIsBitExact) {
  expectRoundTrip({stateOfScript("examples/gpt.whl", "cpu:4"),
                   stateOfScript("examples/gpt.whl", "cpu:2"),
                   stateOfScript("examples/gpt.whl", "cpu:8")});
}

TEST(Reshard, TensorParallelFourTwoRoundTripIsBitExact) {
  expectRoundTrip({stateOfScript("test/equivalence/mlp_split.whl", "cpu:4"),
                   stateOfScript("test/equivalence/mlp_split.whl", "cpu:2")});
}

TEST(Reshard, PipelineTwoFourRoundTripIsBitExact) {
  std::map<std::string, whale::ConfigValue> two = {{"auto_parallel", true},
                                                   {"num_task_graph", 2L}},
                                            four = {{"auto_parallel", true},
                                                    {"num_task_graph", 4L}};
  expectRoundTrip({stateOfScript("examples/gpt.whl", "cpu:2", two),
                   stateOfScript("examples/gpt.whl", "cpu:4", four)});
}

TEST(Reshard, HybridsAndUnevenShardsToEvenRoundTripIsBitExact) {
  expectRoundTrip(
      {stateOfScript("test/equivalence/classify_hybrid.whl", "cpu:4"),
       stateOfScript("test/equivalence/classify_hybrid.whl", "cpu:2")});
  // Devices of speeds 3:1 take uneven shards; then equal devices.
  whale::StateCollection uneven = stateOfScript(
      "test/equivalence/mlp_split.whl", "cpu:1@threads=3,cpu:1@threads=1");
  bool unequal = false;
  for (const whale::StateTensor &t : uneven.tensors)
    if (t.holders.size() == 2)
      unequal = unequal ||
                t.holders[0].second.elements() != t.holders[1].second.elements();
  EXPECT_TRUE(unequal);
  expectRoundTrip(
      {uneven, stateOfScript("test/equivalence/mlp_split.whl", "cpu:2"),
       stateOfScript("test/equivalence/mlp_split.whl", "cpu:4")});
}

TEST(Reshard, TheStoreLosesNoStateWhenAnyOneWorkerIsLost) {
  for (const char *script :
       {"examples/gpt.whl", "test/equivalence/mlp_split.whl"}) {
    SCOPED_TRACE(script);
    whale::StateCollection layout = stateOfScript(script, "cpu:4");
    std::mt19937 rng(3);
    auto wholes = randomWholes(layout, rng);
    whale::StateStore store;
    EXPECT_EQ(store.step(), -1);
    // Two updates of the same plan: the second reuses the first's buffers.
    for (int64_t step : {2, 4}) {
      store.prepare(layout, /*version=*/1) = cutFrom(layout, wholes);
      store.commit(step);
    }
    EXPECT_EQ(store.step(), 4);
    for (int64_t lost = 0; lost < 4; ++lost) {
      SCOPED_TRACE(lost);
      whale::StateCollection surviving;
      whale::HeldState held, rebuilt;
      std::string error;
      ASSERT_TRUE(store.surviving(lost, surviving, held, error)) << error;
      for (const whale::StateTensor &t : surviving.tensors)
        for (const auto &[rank, box] : t.holders)
          EXPECT_NE(rank, lost) << t.name;
      // Every box of the plan, the lost worker's included, rebuilt.
      whale::ReshardPlan plan;
      ASSERT_TRUE(whale::planReshard(surviving, layout, plan, error)) << error;
      ASSERT_TRUE(whale::applyReshard(layout, plan, held, rebuilt, error))
          << error;
      EXPECT_TRUE(rebuilt == cutFrom(layout, wholes));
    }
    // A worker the store's plan lacks (added by a growth since its last
    // update) held none of its state: all of it survives, as it was.
    {
      whale::StateCollection surviving;
      whale::HeldState held;
      std::string error;
      ASSERT_TRUE(store.surviving(5, surviving, held, error)) << error;
      EXPECT_EQ(surviving.ranks.size(), layout.ranks.size());
      EXPECT_TRUE(held == cutFrom(layout, wholes));
    }
    // A copy gone bad is found by its checksum and never used.
    store.damageCopyOf(2);
    whale::StateCollection surviving;
    whale::HeldState held;
    std::string error;
    EXPECT_FALSE(store.surviving(2, surviving, held, error));
    EXPECT_NE(error.find("kept by worker 3 is damaged"), std::string::npos)
        << error;
    EXPECT_TRUE(held.empty());
    EXPECT_TRUE(store.surviving(1, surviving, held, error)) << error;
  }
}

// Ranks as processes: each process's store holds its ranks' boxes and a
// copy of the previous process's (runtime/state/ProcessStore.h). Whichever
// process is lost, the survivors' boxes rebuild every box of the plan, each old
// rank's found with the holder ProcessLoss names; a damaged copy is
// refused.
TEST(Reshard, TheStoreAcrossProcessesLosesNoStateWhenAnyOneProcessIsLost) {
  for (auto [script, processes] :
       {std::pair<const char *, int32_t>{"examples/gpt.whl", 2},
        {"test/equivalence/mlp_split.whl", 4}}) {
    SCOPED_TRACE(script);
    whale::StateCollection layout = stateOfScript(script, "cpu:4");
    std::mt19937 rng(5);
    auto wholes = randomWholes(layout, rng);
    const whale::HeldState all = cutFrom(layout, wholes);
    // Rank r runs on device r (the grid of these plans is the identity).
    std::vector<int64_t> grid(layout.ranks.size());
    for (size_t r = 0; r < grid.size(); ++r)
      grid[r] = static_cast<int64_t>(r);
    whale::ProcessLayout procs;
    ASSERT_EQ(whale::layoutProcesses(0, processes, 4, procs), "");
    auto boxesOf = [&](int32_t p) {
      whale::HeldState out;
      for (const auto &[key, boxes] : all)
        if (procs.ownerOf(grid[key.first]) == p)
          out[key] = boxes;
      return out;
    };
    for (int32_t lost = 0; lost < processes; ++lost) {
      SCOPED_TRACE(lost);
      const whale::ProcessLoss loss({lost}, procs, grid);
      EXPECT_EQ(loss.uncovered(processes), "");
      // Each survivor's store, as the ring's exchange leaves it.
      std::vector<whale::HeldState> held(static_cast<size_t>(processes));
      for (int32_t p = 0; p < processes; ++p) {
        if (p == lost)
          continue;
        whale::StateStore store;
        store.pendingOwn(layout, 1) = boxesOf(p);
        store.pendingCopy() = boxesOf((p + processes - 1) % processes);
        store.commitPending(4);
        std::string error;
        whale::StateCollection kept;
        ASSERT_TRUE(
            store.takeSurviving(loss.lostRanks, 4, kept, held[p], error))
            << error;
        EXPECT_EQ(store.step(), -1); // taken out
        EXPECT_EQ(kept.ranks.size(), layout.ranks.size());
      }
      // Every old rank's boxes are with the holder named for it.
      whale::HeldState pooled;
      for (const auto &[key, boxes] : all) {
        const int32_t holder = loss.holderOf(key.first, procs, grid);
        int32_t old = 0;
        while (loss.renumbered[old] != holder)
          ++old;
        ASSERT_TRUE(held[old].count(key)) << key.second << " of rank "
                                          << key.first;
        EXPECT_TRUE(held[old].at(key) == boxes);
        pooled[key] = held[old].at(key);
      }
      whale::ReshardPlan plan;
      whale::HeldState rebuilt;
      std::string error;
      ASSERT_TRUE(whale::planReshard(layout, layout, plan, error)) << error;
      ASSERT_TRUE(whale::applyReshard(layout, plan, pooled, rebuilt, error))
          << error;
      EXPECT_TRUE(rebuilt == all);
    }
    // A process and its keeper lost together: not covered.
    const whale::ProcessLoss both({0, 1}, procs, grid);
    EXPECT_NE(both.uncovered(processes).find("process 0 and process 1, which "
                                             "keeps the copy of its state, "
                                             "are both lost"),
              std::string::npos);
    // A copy gone bad after it was received is refused by its checksum.
    whale::HeldState held;
    whale::StateCollection kept;
    std::string error;
    whale::StateStore damaged;
    damaged.pendingOwn(layout, 1) = boxesOf(1);
    damaged.pendingCopy() = boxesOf(0);
    damaged.commitPending(4);
    damaged.damageCopyFromAnotherProcess();
    EXPECT_FALSE(damaged.takeSurviving(
        whale::ProcessLoss({0}, procs, grid).lostRanks, 4, kept, held, error));
    EXPECT_NE(error.find("kept by this process is damaged"), std::string::npos)
        << error;
    EXPECT_TRUE(held.empty());
  }
}

TEST(Reshard, AnUpdateThatFailsHalfwayLeavesTheOneBefore) {
  // A process that dies in the middle of an update (its keeper's receive
  // fails) leaves every survivor an update whole: the latest until the
  // pending one commits, and the one before it after.
  whale::StateCollection layout =
      stateOfScript("examples/mlp.whl", "cpu:2");
  std::mt19937 rng(9);
  const whale::HeldState at2 = cutFrom(layout, randomWholes(layout, rng));
  const whale::HeldState at4 = cutFrom(layout, randomWholes(layout, rng));
  whale::StateStore store;
  store.pendingOwn(layout, 1) = at2;
  store.pendingCopy() = at2;
  store.commitPending(2);
  EXPECT_EQ(store.stepsHeld(), (std::vector<int64_t>{2, -1}));
  // Step 4's update filled halfway, then dropped: step 2's stays whole.
  whale::HeldState &half = store.pendingOwn(layout, 1);
  half = at4;
  store.dropPending();
  EXPECT_EQ(store.stepsHeld(), (std::vector<int64_t>{2, -1}));
  // Committed, step 4's is the latest and step 2's is still there.
  store.pendingOwn(layout, 1) = at4;
  store.pendingCopy() = at4;
  store.commitPending(4);
  EXPECT_EQ(store.stepsHeld(), (std::vector<int64_t>{4, 2}));
  whale::HeldState held;
  whale::StateCollection kept;
  std::string error;
  ASSERT_TRUE(store.takeSurviving({}, 2, kept, held, error)) << error;
  EXPECT_TRUE(held == at2);
  // Nothing of a step the store never held.
  whale::StateStore other;
  other.pendingOwn(layout, 1) = at2;
  other.commitPending(2);
  EXPECT_FALSE(other.takeSurviving({}, 6, kept, held, error));
  EXPECT_NE(error.find("no copy of the state after step 6"),
            std::string::npos)
      << error;
}

TEST(Reshard, AppliedPlanNeedsTheBoxesItReads) {
  whale::StateCollection a = stateOfScript("examples/mlp.whl", "cpu:2"),
                         b = stateOfScript("examples/mlp.whl", "cpu:1");
  whale::ReshardPlan plan;
  std::string error;
  ASSERT_TRUE(whale::planReshard(a, b, plan, error)) << error;
  whale::HeldState none, out;
  EXPECT_FALSE(whale::applyReshard(b, plan, none, out, error));
  EXPECT_NE(error.find("old rank 0 has no"), std::string::npos) << error;
}

} // namespace
