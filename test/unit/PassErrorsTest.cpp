//===- PassErrorsTest.cpp - a pass's errors, gathered with their place ----===//

#include "dialects/Whale/IR/WhaleOps.h"
#include "lib/compile/Jit.h"
#include "lib/compile/PassErrors.h"
#include "lowering/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"

#include <gtest/gtest.h>

namespace {

// Line 3, column 8: a relu on bf16, which the runtime computes only in f32.
const char *const kBf16Relu = R"(
func.func @m(%x: tensor<4xbf16>) -> tensor<4xbf16> attributes {whale.model} {
  %r = whale.relu %x : tensor<4xbf16>
  return %r : tensor<4xbf16>
}
)";

mlir::OwningOpRef<mlir::ModuleOp> parse(mlir::MLIRContext &ctx) {
  ctx.loadDialect<whale::WhaleDialect, mlir::func::FuncDialect>();
  whale::loadRuntimeLoweringDialects(ctx);
  return mlir::parseSourceString<mlir::ModuleOp>(
      kBf16Relu, mlir::ParserConfig(&ctx), "m.mlir");
}

TEST(PassErrors, AreGatheredWithTheirPlaceAndNotPrinted) {
  mlir::MLIRContext ctx;
  mlir::OwningOpRef<mlir::ModuleOp> module = parse(ctx);
  ASSERT_TRUE(module);
  whale::PassErrors errors(&ctx);
  mlir::PassManager pm(&ctx);
  pm.addPass(whale::createWhaleToRuntime());
  EXPECT_TRUE(mlir::failed(pm.run(*module)));
  ASSERT_EQ(errors.errors().size(), 1u);
  EXPECT_EQ(errors.errors()[0].file, "m.mlir");
  EXPECT_EQ(errors.errors()[0].line, 3u);
  EXPECT_EQ(errors.errors()[0].column, 8u);
  EXPECT_EQ(errors.text("fallback"),
            "m.mlir:3:8: error: 'whale.relu' op computes in f32 on the "
            "runtime; a bf16 value reaches it only through whale.cast");
}

TEST(PassErrors, WithoutErrorsTheFallbackStands) {
  mlir::MLIRContext ctx;
  whale::PassErrors errors(&ctx);
  EXPECT_EQ(errors.text("planning failed"), "planning failed");
}

// The JIT's lowering hands on the pass's error with its place, not only
// the first message's text.
TEST(PassErrors, TheJitsLoweringReportsThemWithTheirPlace) {
  mlir::MLIRContext ctx;
  mlir::OwningOpRef<mlir::ModuleOp> module = parse(ctx);
  ASSERT_TRUE(module);
  llvm::LLVMContext llvmContext;
  std::string error;
  whale::lowerToLLVM(*module, llvmContext, error, /*sites=*/false);
  EXPECT_EQ(error.rfind("m.mlir:3:8: error: 'whale.relu' op computes in f32",
                        0),
            0u)
      << error;
}

} // namespace
