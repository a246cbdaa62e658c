//===- whale-opt.cpp - mlir-opt for the whale dialect ---------------------===//

#include "dialects/Whale/IR/WhaleOps.h"
#include "lowering/Passes.h"
#include "lowering/Pipelines.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<whale::WhaleDialect, mlir::func::FuncDialect>();
  whale::insertRuntimeLoweringDialects(registry);
  whale::registerWhalePasses();
  whale::registerWhalePipelines();
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "whale optimizer driver\n", registry));
}
