//===- Passes.td - passes over the whale dialect ---------------*- tablegen -*-===//

#ifndef WHALE_LOWERING_PASSES
#define WHALE_LOWERING_PASSES

include "mlir/Pass/PassBase.td"

// Every pass may make whale attributes (#whale.settings, the plan's
// entries) and ops, on a module with none yet (`module {}`): it loads the
// dialect first.
class WhalePass<string name> : Pass<name, "mlir::ModuleOp"> {
  let dependentDialects = ["whale::WhaleDialect"];
}

// Each folder of the lowering declares its own passes.
include "Transforms/Fusion/Passes.td"
include "Transforms/Precision/Passes.td"
include "Transforms/Autodiff/Passes.td"
include "Transforms/Parallel/Passes.td"
include "Conversion/ToRuntime/Passes.td"

#endif // WHALE_LOWERING_PASSES
