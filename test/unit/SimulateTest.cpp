//===- SimulateTest.cpp - reading a planned pipeline's rank programs ------===//
//
// The simulator reads a plan's stages side by side on the context's
// threads, each into a table of its own, and merges the tables. What it
// reads must not depend on that: the same events, numbered the same, and
// the same steps as one thread reading the stages in turn; and every step
// must point at an event of its own op after the merge. A program that
// calls its steps reads as its inlined form, which the runtime runs. On rank
// programs written by hand: fused regions are one event exactly when their
// bodies compute the same, messages keep their peers and tags, and a tag the
// reader cannot hold is refused.
//
//===----------------------------------------------------------------------===//

#include "dialects/Whale/IR/WhaleOps.h"
#include "lib/compile/Cluster.h"
#include "lib/compile/Planner.h"
#include "lowering/Passes.h"
#include "sim/Extract.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <memory>

namespace {

const std::string kScript =
    std::string(WHALE_SOURCE_DIR) + "/examples/gpt_scaled.whl";

struct Read {
  whale::sim::EventTable table;
  whale::sim::ProgramSet programs;
  std::vector<mlir::Operation *> firstOps;
};

/// How many compute steps of `read` name their op's place in its rank
/// function in `module`; each must name an op of its event's kind there.
size_t sitesNamingTheirOps(mlir::ModuleOp module, const Read &read) {
  size_t placed = 0;
  for (const whale::sim::StageProgram &p : read.programs.stages) {
    auto fn = module.lookupSymbol<mlir::func::FuncOp>(p.name);
    EXPECT_TRUE(fn) << p.name;
    if (!fn)
      return 0;
    std::vector<mlir::Operation *> ops;
    for (mlir::Operation &op : fn.getBody().front())
      ops.push_back(&op);
    for (const whale::sim::Step &step : p.steps) {
      const whale::sim::Event &e = read.table[step.event];
      if (step.site < 0 || e.kind != whale::sim::StepKind::Compute)
        continue;
      EXPECT_LT(size_t(step.site), ops.size());
      if (size_t(step.site) >= ops.size())
        return 0;
      EXPECT_EQ(e.op, ops[step.site]->getName().getStringRef().str())
          << p.name << " at " << step.site;
      ++placed;
    }
  }
  return placed;
}

/// Expects steps `x` and `y` (of two readings) the same: event, site and
/// the fields of the event's kind.
void expectSameStep(const whale::sim::Step &x, const whale::sim::Step &y,
                    whale::sim::StepKind kind, const std::string &where) {
  EXPECT_EQ(x.event, y.event) << where;
  EXPECT_EQ(x.site, y.site) << where;
  switch (kind) {
  case whale::sim::StepKind::Send:
  case whale::sim::StepKind::Recv:
    EXPECT_EQ(x.peer, y.peer) << where;
    EXPECT_EQ(x.tag, y.tag) << where;
    break;
  case whale::sim::StepKind::Collective:
    EXPECT_EQ(x.sequence, y.sequence) << where;
    EXPECT_EQ(x.request, y.request) << where;
    break;
  case whale::sim::StepKind::Wait:
    EXPECT_EQ(x.request, y.request) << where;
    break;
  case whale::sim::StepKind::Compute:
    break;
  }
}

/// A 4-stage, 2-way tensor-parallel GPT on 8 CPUs of `micro`
/// micro-batches of one sample a replica, planned with `interp`.
void planGpt(int micro, std::unique_ptr<whale::Interpreter> &interp,
             whale::PlannedModel &plan, int chunks = 1) {
  whale::InterpreterOptions o;
  o.defines = {{"VOCAB", "256"},
               {"T", "16"},
               {"D", "32"},
               {"HEADS", "4"},
               {"LAYERS", "8"},
               {"STAGES", "4"},
               {"TP", "2"},
               {"BATCH", std::to_string(4 * micro)},
               {"MICRO", std::to_string(micro)}};
  // Interleaved, the four TaskGraphs are chunks of 4 / chunks stages.
  if (chunks > 1)
    o.configs["virtual_stages"] = int64_t(chunks);
  interp = std::make_unique<whale::Interpreter>(o);
  ASSERT_TRUE(interp->loadFile(kScript)) << interp->renderDiagnostics();
  whale::Cluster cluster;
  std::string error;
  ASSERT_TRUE(whale::parseCluster("cpu:8", cluster, error)) << error;
  ASSERT_TRUE(whale::planModel(*interp, "gpt", cluster, whale::PlanOptions{},
                               plan, error))
      << error;
  ASSERT_EQ(plan.stages, 4 / chunks);
  ASSERT_EQ(plan.microBatches, micro);
}

/// The GPT of 6 micro-batches, its programs read with the context's
/// threads on or off.
void planAndRead(bool threads, Read &out) {
  std::unique_ptr<whale::Interpreter> interp;
  whale::PlannedModel plan;
  ASSERT_NO_FATAL_FAILURE(planGpt(6, interp, plan));
  if (threads)
    ASSERT_TRUE(interp->context().isMultithreadingEnabled());
  else
    interp->context().disableMultithreading();
  std::string error;
  mlir::ModuleOp ranks = plan.ranksOf(0);
  ASSERT_TRUE(whale::sim::extractPrograms(ranks, plan.model, plan.stages,
                                          out.table, out.programs, error,
                                          &out.firstOps))
      << error;
  // Every step that names its op's place in the rank function names an
  // event of that op: the stages' own tables were merged into the one
  // table without a step pointing at another stage's event.
  const size_t placed = sitesNamingTheirOps(ranks, out);
  EXPECT_GT(placed, 100u);
}

TEST(Extract, StagesReadSideBySideAreReadAsInTurn) {
  Read apart, inTurn;
  planAndRead(true, apart);
  planAndRead(false, inTurn);
  ASSERT_EQ(apart.table.size(), inTurn.table.size());
  for (size_t e = 0; e < apart.table.size(); ++e) {
    EXPECT_EQ(apart.table[e].key(), inTurn.table[e].key()) << "event " << e;
    // Each compute event names the op it was first read from: the same
    // stage's op both ways (different modules, so by name and place).
    ASSERT_EQ(apart.firstOps.size() > e, inTurn.firstOps.size() > e);
    if (e < apart.firstOps.size()) {
      EXPECT_EQ(apart.firstOps[e] == nullptr, inTurn.firstOps[e] == nullptr)
          << "event " << e;
    }
  }
  ASSERT_EQ(apart.programs.stages.size(), 4u);
  size_t sends = 0, collectives = 0;
  for (size_t s = 0; s < 4; ++s) {
    const auto &a = apart.programs.stages[s], &b = inTurn.programs.stages[s];
    EXPECT_EQ(a.name, b.name);
    ASSERT_EQ(a.steps.size(), b.steps.size()) << a.name;
    for (size_t i = 0; i < a.steps.size(); ++i) {
      const whale::sim::Step &x = a.steps[i], &y = b.steps[i];
      expectSameStep(x, y, apart.table[x.event].kind,
                     a.name + " step " + std::to_string(i));
      sends += apart.table[x.event].kind == whale::sim::StepKind::Send;
      collectives +=
          apart.table[x.event].kind == whale::sim::StepKind::Collective;
    }
  }
  // The plan is what it says: activations and gradients cross the stages
  // for each micro-batch, and the shards meet in collectives.
  EXPECT_EQ(sends, 2u * 3u * 6u);
  EXPECT_GT(collectives, 0u);
}

/// Reads `ranks`' `stages` stages of `model` into `out`.
void readRanks(mlir::ModuleOp ranks, const std::string &model, int64_t stages,
               Read &out) {
  std::string error;
  ASSERT_TRUE(whale::sim::extractPrograms(ranks, model, stages, out.table,
                                          out.programs, error, &out.firstOps))
      << error;
}

size_t callsIn(mlir::ModuleOp module) {
  size_t calls = 0;
  module.walk([&](mlir::func::CallOp) { ++calls; });
  return calls;
}

/// Reads `plan`'s rank programs as they are, calling their steps, and
/// after inlining the calls (what the runtime runs): the same events, and
/// the same steps at the same sites, the shard groups' collectives
/// numbered in the same order. `calls`: how many the programs make.
void expectCallsReadAsInlined(const whale::PlannedModel &plan, size_t calls) {
  mlir::ModuleOp ranks = plan.ranksOf(0);
  EXPECT_EQ(callsIn(ranks), calls);
  mlir::OwningOpRef<mlir::ModuleOp> inlined = ranks.clone();
  ASSERT_TRUE(mlir::succeeded(whale::inlineStepCalls(*inlined)));
  ASSERT_EQ(callsIn(*inlined), 0u);

  Read called, flat;
  readRanks(ranks, plan.model, plan.stages, called);
  readRanks(*inlined, plan.model, plan.stages, flat);
  ASSERT_EQ(called.table.size(), flat.table.size());
  for (size_t e = 0; e < called.table.size(); ++e)
    EXPECT_EQ(called.table[e].key(), flat.table[e].key()) << "event " << e;
  size_t collectives = 0;
  for (int64_t s = 0; s < plan.stages; ++s) {
    const auto &a = called.programs.stages[s], &b = flat.programs.stages[s];
    ASSERT_EQ(a.steps.size(), b.steps.size()) << a.name;
    for (size_t i = 0; i < a.steps.size(); ++i) {
      const whale::sim::Step &x = a.steps[i], &y = b.steps[i];
      ASSERT_EQ(x.event, y.event) << a.name << " step " << i;
      const whale::sim::StepKind kind = called.table[x.event].kind;
      expectSameStep(x, y, kind, a.name + " step " + std::to_string(i));
      collectives += kind == whale::sim::StepKind::Collective;
    }
  }
  // A site names the op of the inlined program the runtime times.
  const size_t placed = sitesNamingTheirOps(*inlined, called);
  EXPECT_GT(placed, 1000u);
  EXPECT_GT(collectives, 4u * 8u);
}

TEST(Extract, CalledStepsAreReadAsTheirInlinedBodies) {
  // Eight micro-batches: each stage's program calls its steps.
  std::unique_ptr<whale::Interpreter> interp;
  whale::PlannedModel plan;
  ASSERT_NO_FATAL_FAILURE(planGpt(8, interp, plan));
  // Every stage calls eight forwards, seven backwards (the last stands
  // inline) and six sums of the gradients (the first backward's are the
  // sums, the last's inline).
  expectCallsReadAsInlined(plan, 4u * (8u + 7u + 6u));
}

TEST(Extract, InterleavedCalledStepsAreReadAsTheirInlinedBodies) {
  // Two stages of two chunks: a chunk's steps are functions of their own.
  std::unique_ptr<whale::Interpreter> interp;
  whale::PlannedModel plan;
  ASSERT_NO_FATAL_FAILURE(planGpt(8, interp, plan, 2));
  // Every stage calls, a chunk, eight forwards, seven backwards and six
  // sums.
  expectCallsReadAsInlined(plan, 2u * 2u * (8u + 7u + 6u));
}

/// A rank program of one stage, written by hand: `body` between a
/// function of two 4x8 inputs and its return.
const char *kStage = R"mlir(
func.func @m_stage0(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) {
%s
  return
}
)mlir";

/// `op` of the two inputs, in `order`, as a fused region.
std::string fused(const std::string &name, const std::string &op,
                  const std::string &order) {
  const std::string t = "tensor<4x8xf32>";
  return "  %" + name + " = whale.fused (%x, %y) : (" + t + ", " + t +
         ") -> (" + t + ") {\n  ^bb0(%p: " + t + ", %q: " + t +
         "):\n    %r = whale." + op + " " + order + " : " + t + ", " + t +
         " -> " + t + "\n    whale.fused_yield %r : " + t + "\n  }\n";
}

bool readStage(const std::string &body, Read &out, std::string &error) {
  mlir::MLIRContext ctx;
  ctx.loadDialect<whale::WhaleDialect, mlir::func::FuncDialect>();
  std::string text = kStage;
  text.replace(text.find("%s"), 2, body);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(text, &ctx);
  if (!module) {
    error = "does not parse";
    return false;
  }
  return whale::sim::extractPrograms(*module, "m", 1, out.table, out.programs,
                                     error);
}

TEST(Extract, FusedRegionsAreOneEventExactlyWhenTheirBodiesAre) {
  // Four regions of the same types: an add, a product, the add again, and
  // the add of the inputs swapped (the same sum, another kernel).
  Read read;
  std::string error;
  ASSERT_TRUE(
      readStage(fused("a", "add", "%p, %q") + fused("b", "mul", "%p, %q") +
                    fused("c", "add", "%p, %q") + fused("d", "add", "%q, %p"),
                read, error))
      << error;
  const auto &steps = read.programs.stages.at(0).steps;
  ASSERT_EQ(steps.size(), 4u);
  EXPECT_NE(steps[0].event, steps[1].event);
  EXPECT_EQ(steps[0].event, steps[2].event);
  EXPECT_NE(steps[0].event, steps[3].event);
  EXPECT_NE(steps[1].event, steps[3].event);
  EXPECT_EQ(read.table.size(), 3u);
  for (size_t i = 0; i < steps.size(); ++i)
    EXPECT_EQ(steps[i].site, int32_t(i));
}

TEST(Extract, MessagesKeepTheirPeersAndTags) {
  // Two sends of one shape are one event; each step keeps its own tag.
  Read read;
  std::string error;
  ASSERT_TRUE(
      readStage("  whale.send %x to stage 1 tag 6 : tensor<4x8xf32>\n"
                "  whale.send %y to stage 2 tag 2147483647 : tensor<4x8xf32>\n",
                read, error))
      << error;
  const auto &steps = read.programs.stages.at(0).steps;
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0].event, steps[1].event);
  EXPECT_EQ(read.table[steps[0].event].kind, whale::sim::StepKind::Send);
  EXPECT_EQ(steps[0].peer, 1);
  EXPECT_EQ(steps[0].tag, 6);
  EXPECT_EQ(steps[1].peer, 2);
  EXPECT_EQ(steps[1].tag, 2147483647);
}

TEST(Extract, ATagPast32BitsIsRefused) {
  // A step keeps a tag in 32 bits; the planner's stay far below.
  Read read;
  std::string error;
  EXPECT_FALSE(
      readStage("  whale.send %x to stage 1 tag 4294967296 : tensor<4x8xf32>\n",
                read, error));
  EXPECT_NE(error.find("m_stage0"), std::string::npos) << error;
  EXPECT_NE(error.find("tagged 4294967296"), std::string::npos) << error;
  EXPECT_NE(error.find("32 bits"), std::string::npos) << error;
}

TEST(Extract, AMessageInACalledStepIsRefused) {
  // A step's messages carry its micro-batch's tag: they stay in the caller.
  mlir::MLIRContext ctx;
  ctx.loadDialect<whale::WhaleDialect, mlir::func::FuncDialect>();
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(R"mlir(
func.func private @m_stage0_forward(%x: tensor<4x8xf32>) {
  whale.send %x to stage 1 tag 0 : tensor<4x8xf32>
  return
}
func.func @m_stage0(%x: tensor<4x8xf32>) {
  func.call @m_stage0_forward(%x) : (tensor<4x8xf32>) -> ()
  return
}
)mlir",
                                              &ctx);
  ASSERT_TRUE(module);
  Read read;
  std::string error;
  EXPECT_FALSE(whale::sim::extractPrograms(*module, "m", 1, read.table,
                                           read.programs, error));
  EXPECT_NE(error.find("'whale.send' in 'm_stage0_forward'"), std::string::npos)
      << error;
  EXPECT_NE(error.find("belongs in the caller"), std::string::npos) << error;
}

} // namespace
