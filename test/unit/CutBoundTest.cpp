//===- CutBoundTest.cpp - the least time a planned cut allows -------------===//
//
// cutBound reads a planned model's products before its rank programs
// exist; these tests hold it to what the rank programs, once built and
// simulated, do: every product it counts is one the rank runs, priced the
// same, and no plan runs faster than its bound.
//
//===----------------------------------------------------------------------===//

#include "lib/perf/CutBound.h"
#include "lib/compile/Cluster.h"
#include "lib/compile/Planner.h"
#include "lib/perf/Simulate.h"
#include "sim/Collectives.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace {

const std::string kScript =
    std::string(WHALE_SOURCE_DIR) + "/examples/gpt_auto.whl";
const std::string kCluster =
    std::string(WHALE_SOURCE_DIR) + "/examples/clusters/a100x8.json";

/// A plan, its simulation and the bound its cut gave before its rank
/// programs were built.
struct Planned {
  std::unique_ptr<whale::Interpreter> interp;
  whale::PlannedModel plan;
  whale::Cluster cluster;
  whale::Simulation sim;
  double bound = 0;
};

/// Plans and simulates a GPT small enough to plan in a moment and large
/// enough that its products on an A100 are not all launch (4 layers of
/// width 1,024 over 512 tokens, 64 samples, no recomputation) on 8 A100s,
/// with `defines` on top; `epilogues` false plans without the GPU's
/// fused linear layers (-whale-gemm-epilogues).
void planAndSimulate(const std::map<std::string, std::string> &defines,
                     Planned &out, bool epilogues = true) {
  whale::InterpreterOptions o;
  o.defines = {{"LAYERS", "4"},       {"D", "1024"},     {"HEADS", "16"},
               {"T", "512"},          {"VOCAB", "8192"}, {"BATCH", "64"},
               {"RECOMPUTE", "false"}};
  for (const auto &[k, v] : defines)
    o.defines[k] = v;
  std::string error;
  ASSERT_TRUE(whale::parseCluster(kCluster, out.cluster, error)) << error;
  out.interp = std::make_unique<whale::Interpreter>(o);
  ASSERT_TRUE(out.interp->loadFile(kScript)) << out.interp->renderDiagnostics();
  const whale::sim::Topology topology = whale::topologyOf(out.cluster, 1);
  whale::PlanOptions options;
  options.gemmEpilogues = epilogues;
  options.beforeRankPrograms = [&](mlir::func::FuncOp planned, std::string &) {
    out.bound = whale::cutBound(planned, topology);
    return true;
  };
  ASSERT_TRUE(
      whale::planModel(*out.interp, "", out.cluster, options, out.plan, error))
      << error;
  ASSERT_TRUE(whale::simulatePlan(out.plan, out.cluster, {}, out.sim, error))
      << error;
}

/// The seconds stage `s`'s rank program spends in products (matrix
/// products and attention) as the replay prices them: forward, backward.
std::pair<double, double> productSeconds(const whale::Simulation &sim,
                                         int64_t s) {
  const whale::perf::DeviceModel &device = sim.topology.devices.front();
  double forward = 0, backward = 0;
  for (const whale::sim::Step &step :
       sim.programSets.front()->stages.at(s).steps) {
    const whale::sim::Event &e = sim.events[step.event];
    if (e.kind != whale::sim::StepKind::Compute || !e.cost.matmul)
      continue;
    const double t = whale::sim::computeSeconds(e, device, {});
    (e.op == "whale.matmul_grad" || e.op == "whale.attention_grad" ? backward
                                                                   : forward) +=
        t;
  }
  return {forward, backward};
}

double totalOf(std::pair<double, double> p) { return p.first + p.second; }

TEST(CutBound, OneStageCountsEveryProductItsRankRuns) {
  // Eight replicas of one stage, one micro-batch each: the bound is the
  // rank's products, no more and no fewer (amp's bf16 products included).
  Planned p;
  ASSERT_NO_FATAL_FAILURE(planAndSimulate({}, p));
  ASSERT_EQ(p.plan.stages, 1);
  const double products = totalOf(productSeconds(p.sim, 0));
  ASSERT_GT(products, 0);
  EXPECT_NEAR(p.bound, products, 1e-9 * products);
  EXPECT_LE(p.bound, p.sim.iterationSeconds());

  // Two micro-batches run the products twice over.
  Planned two;
  ASSERT_NO_FATAL_FAILURE(planAndSimulate({{"MICRO", "2"}}, two));
  ASSERT_EQ(two.plan.microBatches, 2);
  EXPECT_NEAR(two.bound, totalOf(productSeconds(two.sim, 0)), 1e-9 * products);
}

TEST(CutBound, ATensorParallelStageWaitsInItsGroupsCollectives) {
  // One stage split over the node's 8 GPUs: the bound is the rank's
  // products and its group's sums and gathers, each over NVLink (the
  // cluster declares only the slower link between nodes). The sharded
  // loss's statistics are left out.
  // A split layer's products are small enough that their memory traffic
  // sets their time; a fused linear layer also stores its GELU's
  // preactivation (what the element kernel stored before), which the
  // cut's bound, priced before fusion, leaves out: the bound equals the
  // products without the epilogues and stays below them with.
  for (bool epilogues : {false, true}) {
    Planned p;
    ASSERT_NO_FATAL_FAILURE(planAndSimulate({{"TP", "8"}}, p, epilogues));
    ASSERT_EQ(p.plan.stages, 1);
    const whale::perf::DeviceModel &gpu = p.sim.topology.devices.front();
    const whale::sim::Link nvlink{gpu.nodeLinkBandwidth, gpu.nodeLinkLatency};
    double collectives = 0;
    size_t counted = 0;
    for (const whale::sim::Step &step :
         p.sim.programSets.front()->stages.at(0).steps) {
      const whale::sim::Event &e = p.sim.events[step.event];
      if (e.kind != whale::sim::StepKind::Collective ||
          e.group != whale::sim::GroupKind::ShardGroup ||
          e.op.find("cross_entropy") != std::string::npos)
        continue;
      collectives += whale::sim::collectiveSeconds(
          e.collective,
          whale::sim::bestAlgorithm(e.collective, e.commBytes, 8, nvlink),
          e.commBytes, 8, nvlink);
      ++counted;
    }
    ASSERT_GT(counted, 0u);
    const double expected = totalOf(productSeconds(p.sim, 0)) + collectives;
    if (epilogues) {
      EXPECT_LE(p.bound, expected);
      EXPECT_NEAR(p.bound, expected, 1e-3 * expected);
    } else {
      EXPECT_NEAR(p.bound, expected, 1e-9 * expected);
    }
    EXPECT_LE(p.bound, p.sim.iterationSeconds());
  }
}

TEST(CutBound, APipelinesFillAndDrainFollowItsStages) {
  // Each stage of this GPT reads from the one before: the first forward
  // passes the stages down, every stage runs its m micro-batches, and the
  // last backward passes them back up. From each stage's products in its
  // built rank program (one micro-batch's: the program's over m):
  //   T >= sum_{i<j} f_i + m (f_j + b_j) + sum_{i<j} b_i   for every j.
  for (const char *schedule : {"1f1b", "gpipe"}) {
    Planned p;
    ASSERT_NO_FATAL_FAILURE(planAndSimulate(
        {{"PP", "4"}, {"MICRO", "8"}, {"SCHEDULE", schedule}}, p));
    ASSERT_EQ(p.plan.stages, 4);
    const double m = 8;
    double down = 0, expected = 0;
    std::vector<std::pair<double, double>> stage;
    for (int64_t s = 0; s < 4; ++s)
      stage.push_back(productSeconds(p.sim, s));
    for (int64_t j = 0; j < 4; ++j) {
      double up = 0;
      for (int64_t i = 0; i < j; ++i)
        up += stage[i].second / m;
      expected = std::max(expected, down + totalOf(stage[j]) + up);
      down += stage[j].first / m;
    }
    EXPECT_NEAR(p.bound, expected, 1e-9 * expected) << schedule;
    // More than the busiest stage's own products: the fill and drain.
    double busiest = 0;
    for (const auto &s : stage)
      busiest = std::max(busiest, totalOf(s));
    EXPECT_GT(p.bound, busiest * 1.05) << schedule;
    EXPECT_LE(p.bound, p.sim.iterationSeconds()) << schedule;
  }
}

TEST(CutBound, NoPlanRunsFasterThanItsCut) {
  const std::vector<std::map<std::string, std::string>> plans = {
      {{"PP", "2"}, {"MICRO", "2"}},
      {{"PP", "2"}, {"MICRO", "8"}},
      {{"PP", "4"}, {"MICRO", "8"}, {"SCHEDULE", "gpipe"}},
      {{"PP", "2"}, {"TP", "2"}, {"MICRO", "4"}, {"RECOMPUTE", "true"}},
      {{"PP", "2"}, {"TP", "4"}, {"MICRO", "8"}, {"AMP", "off"}},
      {{"PP", "8"}, {"MICRO", "8"}},
  };
  for (const auto &defines : plans) {
    Planned p;
    ASSERT_NO_FATAL_FAILURE(planAndSimulate(defines, p));
    std::string label;
    for (const auto &[k, v] : defines)
      label += k + "=" + v + " ";
    EXPECT_GT(p.bound, 0) << label;
    EXPECT_LE(p.bound, p.sim.iterationSeconds()) << label;
    // Without recomputation a stage's products are m times one
    // micro-batch's, which the bound holds at least once.
    if (defines.count("RECOMPUTE"))
      continue;
    double busiest = 0;
    for (int64_t s = 0; s < p.plan.stages; ++s)
      busiest = std::max(busiest, totalOf(productSeconds(p.sim, s)));
    EXPECT_LE(busiest, p.bound * (1 + 1e-9)) << label;
  }
}

TEST(CutBound, InterleavedStagesBoundThroughTheirFirstChunks) {
  // Two chunks a stage: each stage still runs every step of its schedule,
  // and its first and last steps (chunk 0) still wait on the stages
  // before it. Each position's products from the built programs: a stage's
  // program runs m forwards and m backwards of each chunk.
  for (const char *stages : {"2", "4"}) {
    Planned p;
    ASSERT_NO_FATAL_FAILURE(
        planAndSimulate({{"PP", stages}, {"MICRO", "8"}, {"CHUNKS", "2"}}, p));
    ASSERT_EQ(p.plan.chunks, 2);
    double busiest = 0;
    for (int64_t s = 0; s < p.plan.stages; ++s)
      busiest = std::max(busiest, totalOf(productSeconds(p.sim, s)));
    // More than the busiest stage's own: a chunk's share of the fill and
    // drain.
    EXPECT_GT(p.bound, busiest) << stages;
    EXPECT_LE(p.bound, p.sim.iterationSeconds()) << stages;
  }
}

} // namespace
