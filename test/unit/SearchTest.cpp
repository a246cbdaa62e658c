//===- SearchTest.cpp - whale search over a small GPT ---------------------===//
//
// The search's promises: its plans come ranked fastest first; no plan is
// faster than the lower bound the search prunes with; the winner's config,
// given back to the planner and simulator, predicts the time it was ranked
// by; and what cannot fit or cannot plan says why.
//
//===----------------------------------------------------------------------===//

#include "lib/perf/Search.h"
#include "lib/compile/Cluster.h"
#include "lib/compile/Planner.h"
#include "lib/perf/Simulate.h"
#include "test/unit/TempPath.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <tuple>

namespace {

using Outcome = whale::SearchCandidate::Outcome;

const std::string kScript =
    std::string(WHALE_SOURCE_DIR) + "/examples/gpt_scaled.whl";

whale::InterpreterOptions smallGpt() {
  whale::InterpreterOptions o;
  o.defines = {{"VOCAB", "256"}, {"T", "16"},     {"D", "32"},
               {"HEADS", "4"},   {"LAYERS", "4"}, {"BATCH", "16"}};
  return o;
}

whale::Cluster cluster(const std::string &spec) {
  whale::Cluster c;
  std::string error;
  EXPECT_TRUE(whale::parseCluster(spec, c, error)) << error;
  return c;
}

/// Plans the small GPT with `k`'s config keys added, as a user pasting
/// them would; `interp` holds the plan's modules.
void planWithConfig(const whale::SearchCandidate &k, const whale::Cluster &c,
                    std::unique_ptr<whale::Interpreter> &interp,
                    whale::PlannedModel &plan,
                    whale::InterpreterOptions o = smallGpt()) {
  for (const whale::ConfigChoice &c : k.config())
    o.configs[c.key] = c.value;
  interp = std::make_unique<whale::Interpreter>(o);
  ASSERT_TRUE(interp->loadFile(kScript)) << interp->renderDiagnostics();
  std::string error;
  ASSERT_TRUE(whale::planModel(*interp, "", c, {}, plan, error)) << error;
}

/// The largest of a pipeline's constraints sum_{i<j} w_i + m w_j over its
/// micro-batches' work spread evenly (m W / p).
double stretchOfCut(const std::vector<double> &w, int64_t m) {
  double total = 0, before = 0, worst = 0;
  for (double x : w)
    total += x;
  for (double x : w) {
    worst = std::max(worst, before + double(m) * x);
    before += x;
  }
  return worst / (double(m) * total / double(w.size()));
}

TEST(Search, ThePipelinesStretchIsTheLeastAnyCutAllows) {
  EXPECT_DOUBLE_EQ(whale::pipelineStretch(1, 8, 1), 8.0);
  EXPECT_DOUBLE_EQ(whale::pipelineStretch(16, 1, 1), 1.0);
  EXPECT_DOUBLE_EQ(whale::pipelineStretch(16, 8, 2), 1.0);
  // Two stages of 0.6 and 0.4 of one micro-batch's work W, two
  // micro-batches (evenly spread: m W / p = W): 1F1B can take 1.4 W, under
  // the (m + p - 1) / m = 1.5 of equal stages.
  EXPECT_NEAR(stretchOfCut({0.6, 0.4}, 2), 1.4, 1e-12);
  EXPECT_LE(whale::pipelineStretch(2, 2, 1), 1.4);
  std::mt19937 random(7);
  std::uniform_real_distribution<double> share(0.01, 1.0);
  for (int64_t p : {2, 3, 4, 8, 16})
    for (int64_t m : {1, 2, 3, 4, 8, 32, 512}) {
      const double f = whale::pipelineStretch(m, p, 1);
      EXPECT_GE(f, 1.0);
      EXPECT_LE(f, double(m + p - 1) / double(m) + 1e-12);
      // The cut that falls as (1 - 1/m)^j meets it...
      std::vector<double> w;
      for (int64_t j = 0; j < p; ++j)
        w.push_back(std::pow(1 - 1 / double(m), double(j)));
      EXPECT_NEAR(stretchOfCut(w, m), f, 1e-9) << p << " x " << m;
      // ...and no cut goes under it.
      for (int trial = 0; trial < 200; ++trial) {
        for (double &x : w)
          x = share(random);
        EXPECT_GE(stretchOfCut(w, m), f - 1e-12) << p << " x " << m;
      }
    }
}

TEST(Search, RanksPlansAndNoneBeatsItsBound) {
  whale::Cluster c = cluster("cpu:4");
  whale::SearchOptions options;
  options.top = 3;
  size_t told = 0;
  options.progress = [&](size_t done, size_t total,
                         const whale::SearchCandidate &) {
    EXPECT_EQ(done, ++told);
    EXPECT_LE(done, total);
  };
  whale::SearchResult r;
  std::string error;
  ASSERT_TRUE(whale::searchPlans(kScript, smallGpt(), c, options, r, error))
      << error;
  EXPECT_EQ(told, r.candidates.size());
  EXPECT_EQ(r.model, "gpt");
  EXPECT_EQ(r.devices, 4);
  EXPECT_EQ(r.globalBatch, 16);
  // Data, tensor and pipeline degrees multiply to the devices; the script
  // as written is one of the candidates.
  size_t written = 0;
  std::set<std::tuple<int64_t, int64_t, int64_t>> degrees;
  for (const whale::SearchCandidate &k : r.candidates) {
    written += k.asWritten;
    EXPECT_EQ(k.data * k.tensor * k.pipeline, 4) << k.label();
    // Planned: simulated, or set aside once its cut was known.
    if (k.outcome == Outcome::Simulated || k.cutBound > 0)
      degrees.insert({k.data, k.tensor, k.pipeline});
    if (k.outcome == Outcome::Simulated) {
      EXPECT_GT(k.iterationSeconds, 0);
      // The bound sums the same ops' times in another order: equal to the
      // simulation at most, to rounding, where nothing overlaps.
      EXPECT_LE(k.lowerBound, k.iterationSeconds * (1 + 1e-12)) << k.label();
      EXPECT_EQ(static_cast<int64_t>(k.stages.size()), k.pipeline);
    } else {
      EXPECT_FALSE(k.reason.empty()) << k.label();
    }
  }
  EXPECT_EQ(written, 1u);
  // Every way to split 4 devices three ways was tried and planned.
  EXPECT_EQ(degrees.size(), 6u);
  size_t simulated = r.count(Outcome::Simulated);
  for (size_t i = 1; i < simulated; ++i)
    EXPECT_LE(r.candidates[i - 1].iterationSeconds,
              r.candidates[i].iterationSeconds);
}

TEST(Search, APartialProfileKeepsEveryPlanAboveItsBound) {
  // A profile of the script's own plan whose products ran a hundred times
  // faster than the device model says (past its peak): every other plan's
  // products are priced from them, and the bound must still hold.
  whale::Cluster c = cluster("cpu:4");
  whale::Interpreter interp(smallGpt());
  ASSERT_TRUE(interp.loadFile(kScript)) << interp.renderDiagnostics();
  whale::PlannedModel plan;
  std::string error;
  ASSERT_TRUE(whale::planModel(interp, "", c, {}, plan, error)) << error;
  whale::Simulation sim;
  ASSERT_TRUE(whale::simulatePlan(plan, c, {}, sim, error)) << error;
  whale::sim::ProfileDb db;
  const whale::perf::DeviceModel &cpu = sim.topology.devices.front();
  size_t products = 0;
  for (const whale::sim::Event &e : sim.events.all())
    if (e.kind == whale::sim::StepKind::Compute && e.cost.matmul) {
      db.set(whale::sim::ProfileDb::deviceKey(cpu), e,
             {0.01 * whale::perf::opSeconds(e.cost, cpu), 3, true});
      ++products;
    }
  ASSERT_GT(products, 0u);

  whale::SearchOptions options;
  options.top = 3;
  options.profile = &db;
  whale::SearchResult r;
  ASSERT_TRUE(whale::searchPlans(kScript, smallGpt(), c, options, r, error))
      << error;
  size_t simulated = 0;
  for (const whale::SearchCandidate &k : r.candidates)
    if (k.outcome == Outcome::Simulated) {
      ++simulated;
      // The bound sums the same ops' times in another order: equal to the
      // simulation at most, to rounding, where nothing overlaps.
      EXPECT_LE(k.lowerBound, k.iterationSeconds * (1 + 1e-12)) << k.label();
    }
  EXPECT_GT(simulated, 3u);
}

TEST(Search, TheWinnersConfigPredictsItsTime) {
  whale::Cluster c = cluster("cpu:4");
  whale::SearchOptions options;
  whale::SearchResult r;
  std::string error;
  ASSERT_TRUE(whale::searchPlans(kScript, smallGpt(), c, options, r, error))
      << error;
  // The fastest generated plan (the script's own may tie with it).
  const whale::SearchCandidate *best = nullptr;
  for (const whale::SearchCandidate &k : r.candidates)
    if (!k.asWritten && k.outcome == Outcome::Simulated) {
      best = &k;
      break;
    }
  ASSERT_TRUE(best);
  std::unique_ptr<whale::Interpreter> interp;
  whale::PlannedModel plan;
  ASSERT_NO_FATAL_FAILURE(planWithConfig(*best, c, interp, plan));
  EXPECT_EQ(plan.stages, best->pipeline);
  EXPECT_EQ(plan.microBatches, best->microBatches);
  whale::Simulation sim;
  ASSERT_TRUE(whale::simulatePlan(plan, c, {}, sim, error)) << error;
  EXPECT_DOUBLE_EQ(sim.iterationSeconds(), best->iterationSeconds);
}

/// Searches `o` on `c` keeping one plan, so that most pipelines are set
/// aside, many by the compute of their layout's plan with a divisor of
/// their micro-batches; plans and simulates each set aside after all (on
/// devices of unbounded memory where it does not fit), and checks that
/// none takes less than its bound. How many were checked, and how many
/// of those a simulated plan of their layout without recomputation, with
/// fewer micro-batches dividing theirs, could bound.
struct BoundsChecked {
  size_t checked = 0, byFewer = 0, byCut = 0;
};
BoundsChecked expectBoundsHold(const whale::Cluster &c,
                               const whale::InterpreterOptions &o,
                               bool boundByCut = true) {
  whale::SearchOptions options;
  options.top = 1;
  options.boundByCut = boundByCut;
  whale::SearchResult r;
  std::string error;
  EXPECT_TRUE(whale::searchPlans(kScript, o, c, options, r, error)) << error;
  whale::Cluster unbounded = c;
  for (whale::DeviceSpec &d : unbounded.devices)
    d.memory = 0;
  auto boundsIt = [](const whale::SearchCandidate &s,
                     const whale::SearchCandidate &k) {
    return s.outcome == Outcome::Simulated && !s.asWritten && !s.recompute &&
           s.data == k.data && s.tensor == k.tensor &&
           s.pipeline == k.pipeline && s.chunks == k.chunks &&
           s.wholeRows == k.wholeRows && s.even == k.even &&
           s.afterBackward == k.afterBackward &&
           s.microBatches < k.microBatches &&
           k.microBatches % s.microBatches == 0;
  };
  BoundsChecked n;
  for (const whale::SearchCandidate &k : r.candidates) {
    if (k.outcome != Outcome::Bound)
      continue;
    n.byCut += k.reason.find("its cut") == 0;
    n.byFewer += std::any_of(
        r.candidates.begin(), r.candidates.end(),
        [&](const whale::SearchCandidate &s) { return boundsIt(s, k); });
    std::unique_ptr<whale::Interpreter> interp;
    whale::PlannedModel plan;
    planWithConfig(k, unbounded, interp, plan, o);
    whale::Simulation sim;
    EXPECT_TRUE(whale::simulatePlan(plan, unbounded, {}, sim, error)) << error;
    EXPECT_GE(sim.iterationSeconds(), k.lowerBound) << k.label();
    ++n.checked;
  }
  return n;
}

TEST(Search, PlansBoundByFewerMicroBatchesAreNoFasterThanTheirBound) {
  // Without the cut's bound, which sets most of them aside first.
  BoundsChecked n = expectBoundsHold(cluster("cpu:4"), smallGpt(), false);
  EXPECT_GT(n.checked, 10u);
  EXPECT_GT(n.byFewer, 0u);
  EXPECT_EQ(n.byCut, 0u);
  // With it.
  n = expectBoundsHold(cluster("cpu:4"), smallGpt());
  EXPECT_GT(n.byCut, 10u);
  // 16 MiB devices: some plans do not fit, some only with recomputation.
  whale::InterpreterOptions o = smallGpt();
  o.defines["D"] = "128";
  o.defines["VOCAB"] = "2048";
  n = expectBoundsHold(cluster("cpu:4@mem=16MiB"), o);
  EXPECT_GT(n.checked, 0u);
}

TEST(Search, TheFastestDataParallelPlansAreTriedWithSumsAfterTheBackward) {
  whale::Cluster c = cluster("cpu:4");
  whale::SearchOptions options;
  options.top = 3;
  whale::SearchResult r;
  std::string error;
  ASSERT_TRUE(whale::searchPlans(kScript, smallGpt(), c, options, r, error))
      << error;
  // The plans of the first pass: those simulated, by label.
  std::map<std::string, const whale::SearchCandidate *> overlapped;
  std::vector<const whale::SearchCandidate *> after;
  for (const whale::SearchCandidate &k : r.candidates) {
    if (k.outcome != Outcome::Simulated || k.asWritten)
      continue;
    if (k.afterBackward)
      after.push_back(&k);
    else
      overlapped[k.label()] = &k;
  }
  ASSERT_FALSE(after.empty());
  EXPECT_LE(after.size(), 3u);
  for (const whale::SearchCandidate *k : after) {
    EXPECT_GT(k->data, 1) << k->label();
    // The same plan as one the first pass simulated, with the same memory;
    // its config asks for the sums after the backward.
    whale::SearchCandidate same = *k;
    same.afterBackward = false;
    ASSERT_TRUE(overlapped.count(same.label())) << k->label();
    EXPECT_EQ(overlapped[same.label()]->peakMemory, k->peakMemory);
    auto config = k->config();
    EXPECT_NE(std::find(config.begin(), config.end(),
                        whale::ConfigChoice{"grad_sync",
                                            std::string("after_backward")}),
              config.end());
    // Planned from that config, the rank programs sum after the backward
    // and the simulation gives the time the search ranked it by.
    std::unique_ptr<whale::Interpreter> interp;
    whale::PlannedModel plan;
    ASSERT_NO_FATAL_FAILURE(planWithConfig(*k, c, interp, plan));
    bool started = false;
    plan.ranks.get().walk([&](mlir::Operation *op) {
      started |= op->getName().getStringRef() == "whale.all_reduce_start";
    });
    EXPECT_FALSE(started) << k->label();
    whale::Simulation sim;
    ASSERT_TRUE(whale::simulatePlan(plan, c, {}, sim, error)) << error;
    EXPECT_DOUBLE_EQ(sim.iterationSeconds(), k->iterationSeconds);
  }
  // Still ranked fastest first, the variants among the others.
  for (size_t i = 1; i < r.count(Outcome::Simulated); ++i)
    EXPECT_LE(r.candidates[i - 1].iterationSeconds,
              r.candidates[i].iterationSeconds);
}

TEST(Search, InterleavedPipelinesAreTriedAndPlanAsLabelled) {
  whale::Cluster c = cluster("cpu:4");
  whale::SearchOptions options;
  options.top = 1000; // every candidate simulated, none cut by the bound
  whale::SearchResult r;
  std::string error;
  ASSERT_TRUE(whale::searchPlans(kScript, smallGpt(), c, options, r, error))
      << error;
  int simulated = 0;
  std::set<std::string> twoChunks;
  for (const whale::SearchCandidate &k : r.candidates)
    if (k.chunks == 2 && k.outcome == Outcome::Simulated)
      twoChunks.insert(k.label());
  for (const whale::SearchCandidate &k : r.candidates) {
    if (k.chunks == 1 || k.asWritten)
      continue;
    // Four chunks a stage only for the fastest plans of two, as a second
    // pass.
    if (k.chunks == 4) {
      whale::SearchCandidate twin = k;
      twin.chunks = 2;
      EXPECT_TRUE(twoChunks.count(twin.label())) << k.label();
    }
    // 1F1B over 2 or 4 chunks a stage, micro-batches in groups of p.
    EXPECT_GT(k.pipeline, 1) << k.label();
    EXPECT_EQ(k.schedule, whale::PipelineSchedule::one_f_one_b) << k.label();
    EXPECT_EQ(k.microBatches % k.pipeline, 0) << k.label();
    auto config = k.config();
    EXPECT_NE(std::find(config.begin(), config.end(),
                        whale::ConfigChoice{"virtual_stages", k.chunks}),
              config.end())
        << k.label();
    if (k.outcome != Outcome::Simulated)
      continue;
    ++simulated;
    EXPECT_LE(k.lowerBound, k.iterationSeconds) << k.label();
    // Planned from its config, every rank program holds the chunks, and
    // the simulation gives the time the search ranked it by.
    std::unique_ptr<whale::Interpreter> interp;
    whale::PlannedModel plan;
    ASSERT_NO_FATAL_FAILURE(planWithConfig(k, c, interp, plan));
    EXPECT_EQ(plan.stages, k.pipeline);
    int programs = 0;
    plan.ranks.get().walk([&](mlir::func::FuncOp fn) {
      auto rank = fn->getAttrOfType<mlir::DictionaryAttr>("whale.rank");
      if (!rank)
        return;
      ++programs;
      auto chunks = rank.getAs<mlir::IntegerAttr>("chunks");
      ASSERT_TRUE(chunks) << k.label();
      EXPECT_EQ(chunks.getInt(), k.chunks);
    });
    EXPECT_EQ(programs, k.pipeline);
    whale::Simulation sim;
    ASSERT_TRUE(whale::simulatePlan(plan, c, {}, sim, error)) << error;
    EXPECT_DOUBLE_EQ(sim.iterationSeconds(), k.iterationSeconds);
  }
  EXPECT_GT(simulated, 0);
}

// A script whose config block decides what the search varies (here given
// as --config, which overrides a block alike) searches the same candidates
// to the same times: each candidate says recompute, chunks, tensor split,
// rows and balance for itself.
TEST(Search, TheScriptsOwnConfigDoesNotLeakIntoTheCandidates) {
  whale::Cluster c = cluster("cpu:4");
  whale::SearchOptions options;
  options.top = 3;
  whale::SearchResult plain, decided;
  std::string error;
  ASSERT_TRUE(whale::searchPlans(kScript, smallGpt(), c, options, plain, error))
      << error;
  whale::InterpreterOptions o = smallGpt();
  o.configs = {{"recompute", true},
               {"task_graph_split", int64_t(2)},
               {"virtual_stages", int64_t(2)},
               {"split_rows", std::string("whole")},
               {"balance", std::string("even")}};
  ASSERT_TRUE(whale::searchPlans(kScript, o, c, options, decided, error))
      << error;
  std::map<std::string, const whale::SearchCandidate *> byLabel;
  for (const whale::SearchCandidate &k : plain.candidates)
    if (!k.asWritten)
      byLabel[k.label()] = &k;
  size_t compared = 0;
  for (const whale::SearchCandidate &k : decided.candidates) {
    if (k.asWritten || k.outcome != Outcome::Simulated)
      continue;
    ASSERT_TRUE(byLabel.count(k.label())) << k.label();
    const whale::SearchCandidate &same = *byLabel[k.label()];
    EXPECT_EQ(same.outcome, Outcome::Simulated) << k.label();
    EXPECT_DOUBLE_EQ(same.iterationSeconds, k.iterationSeconds) << k.label();
    EXPECT_EQ(same.peakMemory, k.peakMemory) << k.label();
    ++compared;
  }
  EXPECT_GE(compared, 3u);
}

TEST(Search, PlansThatCannotFitAreCountedWithTheirReason) {
  // 16 MiB devices: the replicated model and its Adam state do not fit,
  // so the fitting plans are the ones that cut it up.
  whale::Cluster c = cluster("cpu:4@mem=16MiB");
  whale::SearchOptions options;
  whale::SearchResult r;
  std::string error;
  whale::InterpreterOptions o = smallGpt();
  o.defines["D"] = "128";
  o.defines["VOCAB"] = "2048";
  ASSERT_TRUE(whale::searchPlans(kScript, o, c, options, r, error)) << error;
  EXPECT_GT(r.count(Outcome::OverMemory), 0u);
  std::map<std::string, Outcome> byLabel;
  for (const whale::SearchCandidate &k : r.candidates)
    byLabel[k.label()] = k.outcome;
  size_t recomputing = 0;
  for (const whale::SearchCandidate &k : r.candidates)
    if (k.outcome == Outcome::OverMemory) {
      EXPECT_NE(k.reason.find("fit"), std::string::npos) << k.reason;
    } else if (k.outcome == Outcome::Simulated) {
      EXPECT_LE(k.peakMemory, 16 << 20) << k.label();
      // Recomputation is simulated only where the plan without it is not
      // known to fit (the first pass's plans; the variants with the sums
      // after the backward repeat some of them): it does not, or its cut
      // set it aside before its memory was known.
      if (k.recompute && !k.afterBackward) {
        ++recomputing;
        whale::SearchCandidate keep = k;
        keep.recompute = false;
        const Outcome kept = byLabel[keep.label()];
        EXPECT_TRUE(kept == Outcome::OverMemory || kept == Outcome::Bound)
            << k.label();
      }
    }
  EXPECT_GT(recomputing, 0u);
}

// ZeRO stage 3 is tried where there are replicas, and only costs time: it is
// simulated only where the same plan with whole parameters was refused for
// memory (a variant of a pick with its sums after the backward, where the
// pick's was), and on 16 MiB devices it lets two replicas of a two-way
// split fit, the fastest plans with replicas there.
// ZeRO stages 3 and 2 (and both) are tried where the plan sharding less
// was refused for memory, and simulated only there.
TEST(Search,
     ShardedParametersAndGradientsAreTriedWhereLessShardedOnesDoNotFit) {
  whale::SearchOptions options;
  std::string error;
  whale::InterpreterOptions o = smallGpt();
  o.defines["D"] = "128";
  o.defines["VOCAB"] = "2048";
  whale::SearchResult tight;
  ASSERT_TRUE(whale::searchPlans(kScript, o, cluster("cpu:4@mem=16MiB"),
                                 options, tight, error))
      << error;
  std::map<std::string, Outcome> byLabel;
  for (const whale::SearchCandidate &k : tight.candidates)
    byLabel[k.label()] = k.outcome;
  size_t parameters = 0, gradients = 0, gradientsTried = 0;
  for (const whale::SearchCandidate &k : tight.candidates) {
    if (k.shardGradients) {
      ++gradientsTried;
      EXPECT_GT(k.microBatches, 1) << k.label();
    }
    if (!(k.shardParameters || k.shardGradients) ||
        k.outcome != Outcome::Simulated)
      continue;
    parameters += k.shardParameters;
    gradients += k.shardGradients;
    EXPECT_GT(k.data, 1) << k.label();
    EXPECT_LE(k.peakMemory, 16 << 20) << k.label();
    whale::SearchCandidate less = k;
    if (k.shardParameters && k.shardGradients)
      less.shardGradients = false;
    else
      less.shardParameters = less.shardGradients = false;
    less.afterBackward = false;
    auto it = byLabel.find(less.label());
    ASSERT_NE(it, byLabel.end()) << k.label();
    EXPECT_EQ(it->second, Outcome::OverMemory) << k.label();
    const std::vector<whale::ConfigChoice> config = k.config();
    for (auto [key, on] :
         {std::pair<const char *, bool>{"shard_parameters", k.shardParameters},
          {"shard_gradients", k.shardGradients}})
      EXPECT_EQ(std::find(config.begin(), config.end(),
                          whale::ConfigChoice{key, true}) != config.end(),
                on)
          << k.label() << ": " << key;
  }
  EXPECT_GT(parameters, 0u);
  EXPECT_GT(gradientsTried, 0u);
  std::printf("%zu plans simulated with parameters sharded, %zu with "
              "gradients sharded (%zu tried)\n",
              parameters, gradients, gradientsTried);
  // The fastest plan with replicas is a sharded one: replicas fit only so.
  // (A four-way split, no replicas, is 1.8% faster still, as a CPU BLAS's
  // copies of the operands are priced: perfmodel/DeviceModel.h.)
  auto replicated =
      std::find_if(tight.candidates.begin(), tight.candidates.end(),
                   [](const whale::SearchCandidate &k) {
                     return k.data > 1 && k.outcome == Outcome::Simulated;
                   });
  ASSERT_NE(replicated, tight.candidates.end());
  EXPECT_TRUE(replicated->shardParameters || replicated->shardGradients)
      << replicated->label();

  // With room for whole parameters, none is simulated sharded.
  whale::SearchResult roomy;
  ASSERT_TRUE(
      whale::searchPlans(kScript, o, cluster("cpu:4"), options, roomy, error))
      << error;
  for (const whale::SearchCandidate &k : roomy.candidates)
    if (k.shardParameters || k.shardGradients) {
      EXPECT_NE(k.outcome, Outcome::Simulated) << k.label();
    }
}

// Two nodes of two devices: a stage of 4 replicas spans both, so the
// sharded plans are tried sharded within each node first (hybrid
// sharding, groups of 2), where the plan sharding nothing was refused for
// memory, and sharded over all 4 only where that was refused too. At 24 MiB
// a device, data parallelism over 4 fits with the parameters sharded in
// node groups, and sharding them over all 4 is set aside (it fits sharding
// less).
TEST(Search, ShardingWithinNodesIsTriedBeforeShardingOverAll) {
  const std::string path = whale::testing::tempPath("two_nodes.json");
  std::ofstream(path) << R"({"nodes": [{"name": "host", "count": 2,
      "devices": [{"kind": "cpu", "count": 2, "memory": "24MiB"}]}],
      "links": {"inter_node": {"bandwidth": 1e9, "latency": 2e-5}}})";
  whale::InterpreterOptions o = smallGpt();
  o.defines["D"] = "128";
  o.defines["VOCAB"] = "2048";
  whale::SearchOptions options;
  whale::SearchResult r;
  std::string error;
  ASSERT_TRUE(whale::searchPlans(kScript, o, cluster(path), options, r, error))
      << error;
  std::map<std::string, Outcome> byLabel;
  for (const whale::SearchCandidate &k : r.candidates)
    byLabel[k.label()] = k.outcome;
  size_t hybrid = 0;
  for (const whale::SearchCandidate &k : r.candidates) {
    if (k.shardGroup == 0 || k.outcome != Outcome::Simulated)
      continue;
    ++hybrid;
    EXPECT_EQ(k.shardGroup, 2) << k.label();
    EXPECT_LE(k.peakMemory, 24 << 20) << k.label();
    // Sharding nothing did not fit; sharding over all was not needed.
    whale::SearchCandidate whole = k, all = k;
    whole.shardGroup = 0;
    whole.shardParameters = whole.shardGradients = false;
    whole.afterBackward = false;
    all.shardGroup = 0;
    ASSERT_TRUE(byLabel.count(whole.label())) << whole.label();
    EXPECT_EQ(byLabel[whole.label()], Outcome::OverMemory) << k.label();
    if (byLabel.count(all.label())) {
      EXPECT_EQ(byLabel[all.label()], Outcome::Dominated) << all.label();
    }
    const std::vector<whale::ConfigChoice> config = k.config();
    EXPECT_NE(std::find(config.begin(), config.end(),
                        whale::ConfigChoice{"shard_group", int64_t(2)}),
              config.end())
        << k.label();
  }
  EXPECT_GT(hybrid, 0u);
  // On one node nothing is sharded in groups.
  whale::SearchResult one;
  ASSERT_TRUE(whale::searchPlans(kScript, o, cluster("cpu:4@mem=24MiB"),
                                 options, one, error))
      << error;
  for (const whale::SearchCandidate &k : one.candidates)
    EXPECT_EQ(k.shardGroup, 0) << k.label();
}

/// The search of `o` on `c` with `jobs` candidates planned side by side;
/// `told` gets the progress lines' labels in the order told.
whale::SearchResult searchWithJobs(const whale::Cluster &c,
                                   const whale::InterpreterOptions &o, int top,
                                   int jobs, std::vector<std::string> &told) {
  whale::SearchOptions options;
  options.top = top;
  options.jobs = jobs;
  options.progress = [&](size_t, size_t, const whale::SearchCandidate &k) {
    told.push_back(k.label());
  };
  whale::SearchResult r;
  std::string error;
  EXPECT_TRUE(whale::searchPlans(kScript, o, c, options, r, error)) << error;
  return r;
}

/// The same outcomes, figures and order of progress with 1 and 3 jobs;
/// `setAsideByCut`: some candidates are set aside once their cut is known
/// (planned ahead of their turn, with 3 jobs, against a K-th best that
/// fell later).
void expectSameSearch(const whale::Cluster &c,
                      const whale::InterpreterOptions &o, int top,
                      Outcome mustOccur, bool setAsideByCut = false) {
  std::vector<std::string> toldOne, toldThree;
  whale::SearchResult one = searchWithJobs(c, o, top, 1, toldOne);
  whale::SearchResult three = searchWithJobs(c, o, top, 3, toldThree);
  EXPECT_GT(one.count(mustOccur), 0u);
  if (setAsideByCut) {
    EXPECT_TRUE(std::any_of(one.candidates.begin(), one.candidates.end(),
                            [](const whale::SearchCandidate &k) {
                              return k.outcome == Outcome::Bound &&
                                     k.cutBound > 0 &&
                                     k.reason.find("its cut") == 0;
                            }));
  }
  EXPECT_GT(one.count(Outcome::Dominated), 0u);
  EXPECT_EQ(toldThree, toldOne);
  ASSERT_EQ(three.candidates.size(), one.candidates.size());
  for (size_t i = 0; i < one.candidates.size(); ++i) {
    const whale::SearchCandidate &a = one.candidates[i],
                                 &b = three.candidates[i];
    EXPECT_EQ(a.label(), b.label()) << "#" << i;
    EXPECT_EQ(a.outcome, b.outcome) << a.label();
    EXPECT_EQ(a.reason, b.reason) << a.label();
    EXPECT_DOUBLE_EQ(a.iterationSeconds, b.iterationSeconds) << a.label();
    EXPECT_DOUBLE_EQ(a.lowerBound, b.lowerBound) << a.label();
    EXPECT_DOUBLE_EQ(a.cutBound, b.cutBound) << a.label();
    EXPECT_EQ(a.peakMemory, b.peakMemory) << a.label();
  }
}

TEST(Search, PlansSideBySideDecideAsOneAtATime) {
  // Candidates planned ahead of their turn are taken or dropped by what
  // came before, as one at a time would: memory and dominance on small
  // CPUs, and the lower bound on A100s (a model big enough for its GEMMs
  // to dominate, bf16).
  whale::InterpreterOptions small = smallGpt();
  small.defines["D"] = "128";
  small.defines["VOCAB"] = "2048";
  expectSameSearch(cluster("cpu:4@mem=16MiB"), small, 2, Outcome::OverMemory);
  whale::InterpreterOptions wide;
  wide.defines = {{"VOCAB", "32000"}, {"T", "1024"},   {"D", "2048"},
                  {"HEADS", "16"},    {"LAYERS", "4"}, {"BATCH", "64"},
                  {"AMP", "bf16"}};
  expectSameSearch(
      cluster(std::string(WHALE_SOURCE_DIR) + "/examples/clusters/a100x8.json"),
      wide, 1, Outcome::Bound, /*setAsideByCut=*/true);
}

TEST(Search, AScriptWithoutATrainBlockOrFileIsAnError) {
  whale::Cluster c = cluster("cpu:2");
  std::string path = whale::testing::tempPath("search_no_train.whl");
  std::ofstream(path) << "import nn\nmodel m(x: f32[B, 4]) {\n"
                         "  return mean(nn.linear(x, 3))\n}\n";
  whale::SearchResult r;
  std::string error;
  EXPECT_FALSE(whale::searchPlans(path, {}, c, {}, r, error));
  EXPECT_NE(error.find("train"), std::string::npos) << error;
  error.clear();
  EXPECT_FALSE(whale::searchPlans(path + ".missing", {}, c, {}, r, error));
  EXPECT_NE(error.find("missing"), std::string::npos) << error;
}

} // namespace
