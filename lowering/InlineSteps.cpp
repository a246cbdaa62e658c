//===- InlineSteps.cpp - rank programs' calls of their steps, inlined -----===//
//
// -whale-rank-programs may outline a stage's steps into functions its rank
// program calls once a micro-batch, so a plan of hundreds of micro-batches
// is fused and simulated one step at a time. The runtime runs such a
// program as if each call were its callee's body: the lowering inlines
// the calls first, and the ops then stand where the simulator's reader
// numbers them (the sites a traced run names each op's time by).
//
//===----------------------------------------------------------------------===//

#include "lowering/CloneBody.h"
#include "lowering/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;

void whale::inlineStepCalls(ModuleOp module) {
  SymbolTable symbols(module);
  SmallVector<func::CallOp> calls;
  module.walk([&](func::CallOp call) { calls.push_back(call); });
  llvm::SetVector<func::FuncOp> callees;
  for (func::CallOp call : calls) {
    auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
    if (!callee || callee.isExternal())
      continue;
    OpBuilder b(call);
    call->replaceAllUsesWith(
        cloneBody(b, callee.getBody().front(), call.getOperands()));
    call.erase();
    callees.insert(callee);
  }
  // A step's function has no other use once its calls are inlined.
  for (func::FuncOp callee : callees)
    if (callee.isPrivate() && SymbolTable::symbolKnownUseEmpty(callee, module))
      callee.erase();
}
