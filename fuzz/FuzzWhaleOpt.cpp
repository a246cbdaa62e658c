//===- FuzzWhaleOpt.cpp - libFuzzer target: whale-opt's inputs ------------===//
//
// IR that the verifier accepts must never crash a pass (issue 92 items 4
// and 5): any bytes are parsed as a module of the whale dialect, and a
// module that parses and verifies goes through every whale pass, each on a
// copy of its own, as `whale-opt --PASS` runs it. A pass may refuse the
// module (its error), never crash, hang or allocate without bound. The
// corpus (fuzz/corpus-opt) is every chunk of the lit tests' .mlir files.
//
//===----------------------------------------------------------------------===//

#include "dialects/Whale/IR/WhaleOps.h"
#include "lowering/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace {

mlir::MLIRContext &context() {
  static mlir::MLIRContext *ctx = [] {
    mlir::DialectRegistry registry;
    registry.insert<whale::WhaleDialect, mlir::func::FuncDialect>();
    whale::insertRuntimeLoweringDialects(registry);
    whale::registerWhalePasses();
    auto *c = new mlir::MLIRContext(registry);
    c->disableMultithreading();
    c->loadAllAvailableDialects();
    return c;
  }();
  return *ctx;
}

// Every pass of lowering/**/Passes.td, by its whale-opt flag (lit
// Tools/pass-lists.test checks the list against the .td files).
const char *const kPasses[] = {
    "whale-fuse-attention",    "whale-gemm-epilogues",
    "whale-fuse-rounded-sums", "whale-fuse-elementwise",
    "whale-amp-storage",       "whale-widen-bf16",
    "whale-annotate-cost",     "whale-taskgraph-partition",
    "whale-virtual-devices",   "whale-pipeline",
    "whale-balance",           "whale-data-parallel",
    "whale-sharding",          "whale-rank-programs",
    "whale-shard-optimizer",   "whale-shard-parameters",
    "whale-prefetch-params",   "whale-shard-gradients",
    "whale-overlap-grad-sync", "whale-autodiff",
    "whale-train-step",        "whale-copy-written-operands",
    "whale-to-runtime",
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mlir::MLIRContext &ctx = context();
  // Errors are the inputs' (a refusal is an answer): none is printed.
  mlir::ScopedDiagnosticHandler quiet(
      &ctx, [](mlir::Diagnostic &) { return mlir::success(); });
  std::string text(reinterpret_cast<const char *>(data), size);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(text, &ctx);
  if (!module || mlir::failed(mlir::verify(*module)))
    return 0;
  for (const char *pass : kPasses) {
    mlir::OwningOpRef<mlir::ModuleOp> copy = module->clone();
    mlir::PassManager pm(&ctx);
    if (mlir::failed(mlir::parsePassPipeline(
            std::string("builtin.module(") + pass + ")", pm)))
      continue;
    (void)pm.run(*copy);
  }
  return 0;
}
