//===- InlineSteps.cpp - rank programs' calls of their steps, inlined -----===//
//
// -whale-rank-programs may outline a stage's steps into functions its rank
// program calls once a micro-batch, so a plan of hundreds of micro-batches
// is fused and simulated one step at a time. The runtime runs such a
// program as if each call were its callee's body: the lowering inlines
// the calls first, and the ops then stand where the simulator's reader
// numbers them (the sites a traced run names each op's time by). A call's
// whale.row_offset says where its micro-batch's rows start: the callee's
// dropouts draw as the first micro-batch's, the inlined ones from there.
//
//===----------------------------------------------------------------------===//

#include "lowering/CloneBody.h"
#include "lowering/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;

SmallVector<Value> whale::inlineStep(OpBuilder &b, Block &body, ValueRange args,
                                     int64_t rows) {
  return cloneBody(b, body, args, [&](Operation *clone) {
    if (rows)
      clone->walk(
          [&](whale::DropoutOp d) { d.setRowOffset(d.getRowOffset() + rows); });
  });
}

LogicalResult whale::inlineStepCalls(ModuleOp module) {
  SymbolTable symbols(module);
  SmallVector<func::CallOp> calls;
  module.walk([&](func::CallOp call) { calls.push_back(call); });
  llvm::SetVector<func::FuncOp> callees;
  for (func::CallOp call : calls) {
    auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
    if (!callee || callee.isExternal())
      continue;
    // Steps are leaves: a callee that calls (itself, or anything) would be
    // copied into its own body without end (a model that called itself
    // grew to tens of GB).
    bool calls = false;
    callee.walk([&](func::CallOp) { calls = true; });
    if (calls)
      return call.emitOpError("calls @")
             << callee.getSymName()
             << ", which makes calls itself: only a rank program's steps, "
                "which call nothing, are inlined";
    OpBuilder b(call);
    auto rows = call->getAttrOfType<IntegerAttr>(kStepRowsAttr);
    call->replaceAllUsesWith(inlineStep(b, callee.getBody().front(),
                                        call.getOperands(),
                                        rows ? rows.getInt() : 0));
    call.erase();
    callees.insert(callee);
  }
  // A step's function has no other use once its calls are inlined. One
  // walk finds what is still referenced: a walk per callee took most of
  // the 80 s `whale plan` spent on a 1T-parameter plan's report.
  llvm::DenseSet<StringAttr> used;
  if (auto uses = SymbolTable::getSymbolUses(&module.getBodyRegion()))
    for (const SymbolTable::SymbolUse &use : *uses)
      used.insert(use.getSymbolRef().getRootReference());
  for (func::FuncOp callee : callees)
    if (callee.isPrivate() && !used.contains(callee.getSymNameAttr()))
      callee.erase();
  return success();
}
