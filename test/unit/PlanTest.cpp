//===- PlanTest.cpp - the typed plan, written and read --------------------===//
//
// PlanUpdate writes each kind of entry of PlanEntries.def and ModelPlan
// reads it back typed; what it writes passes the dialect's check, and a
// later update adds to the plan rather than replacing it.
//
//===----------------------------------------------------------------------===//

#include "dialects/Whale/IR/Plan.h"
#include "dialects/Whale/IR/WhaleOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Verifier.h"

#include <gtest/gtest.h>

using namespace whale;

namespace {

struct PlanTest : ::testing::Test {
  PlanTest() {
    ctx.loadDialect<WhaleDialect, mlir::func::FuncDialect>();
    mlir::OpBuilder b(&ctx);
    module = mlir::ModuleOp::create(b.getUnknownLoc());
    b.setInsertionPointToEnd(module->getBody());
    fn = mlir::func::FuncOp::create(b, b.getUnknownLoc(), "m",
                                    b.getFunctionType({}, {}));
    fn.addEntryBlock();
    b.setInsertionPointToEnd(&fn.getBody().front());
    mlir::func::ReturnOp::create(b, b.getUnknownLoc());
    fn->setAttr("whale.model", b.getUnitAttr());
  }
  mlir::MLIRContext ctx;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  mlir::func::FuncOp fn;
};

TEST_F(PlanTest, NoPlanReadsAsEmpty) {
  ModelPlan plan = ModelPlan::of(fn);
  EXPECT_FALSE(plan);
  EXPECT_FALSE(plan.stages().has_value());
  EXPECT_FALSE(plan.grid().has_value());
  EXPECT_FALSE(plan.buckets());
  EXPECT_EQ(plan.rowGroupOrOne(), 1);
}

TEST_F(PlanTest, EveryKindOfEntryReadsBackAsWritten) {
  mlir::Builder b(&ctx);
  PlanUpdate(fn)
      .devices(4)
      .grid({0, 2, 1, 3})
      .deviceSeconds({0.5, 0.25})
      .gradWeight(0.125)
      .schedule(PipelineSchedule::gpipe)
      .balance(BalanceKind::given)
      .buckets(b.getArrayAttr({b.getArrayAttr({})}))
      .apply();
  ModelPlan plan = ModelPlan::of(fn);
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan.devices(), 4);
  ASSERT_TRUE(plan.grid());
  EXPECT_EQ(std::vector<int64_t>(plan.grid()->begin(), plan.grid()->end()),
            (std::vector<int64_t>{0, 2, 1, 3}));
  ASSERT_TRUE(plan.deviceSeconds());
  EXPECT_EQ((*plan.deviceSeconds())[1], 0.25);
  EXPECT_EQ(plan.gradWeight(), 0.125);
  EXPECT_EQ(plan.schedule(), PipelineSchedule::gpipe);
  EXPECT_EQ(plan.balance(), BalanceKind::given);
  ASSERT_TRUE(plan.buckets());
  EXPECT_EQ(plan.buckets().size(), 1u);
  EXPECT_TRUE(mlir::succeeded(mlir::verify(*module)));
  // The textual form is the dictionary every pass and lit test reads.
  EXPECT_EQ(mlir::cast<mlir::StringAttr>(plan.getDictionary().get("schedule"))
                .getValue(),
            "gpipe");
}

TEST_F(PlanTest, ALaterUpdateAddsToThePlanAndReplacesOnlyItsOwnEntries) {
  PlanUpdate(fn).stages(2).replicas(3).apply();
  PlanUpdate(fn).replicas(1).microBatches(4).apply();
  ModelPlan plan = ModelPlan::of(fn);
  EXPECT_EQ(plan.stages(), 2);
  EXPECT_EQ(plan.replicas(), 1);
  EXPECT_EQ(plan.microBatches(), 4);
  EXPECT_FALSE(plan.chunks().has_value());
}

TEST_F(PlanTest, TheDialectRefusesAnEntryOfTheWrongType) {
  mlir::Builder b(&ctx);
  fn->setAttr(
      "whale.plan",
      b.getDictionaryAttr({b.getNamedAttr("stages", b.getF64FloatAttr(2))}));
  std::string message;
  mlir::ScopedDiagnosticHandler handler(&ctx, [&](mlir::Diagnostic &d) {
    message = d.str();
    return mlir::success();
  });
  EXPECT_TRUE(mlir::failed(mlir::verify(*module)));
  EXPECT_NE(message.find("'whale.plan' entry 'stages' must be an i64"),
            std::string::npos)
      << message;
}

} // namespace
