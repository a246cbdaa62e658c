//===- Passes.h - passes over the whale dialect ------------------*- C++
//-*-===//

#ifndef WHALE_LOWERING_PASSES_H
#define WHALE_LOWERING_PASSES_H

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::func {
class FuncOp;
}

namespace whale {

/// Moves every TaskGraph's body in front of it and replaces its results by
/// the values its yield hands on (one device: the strategy does not matter).
void inlineTaskGraphs(mlir::func::FuncOp fn);

#define GEN_PASS_DECL
#include "lowering/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "lowering/Passes.h.inc"

} // namespace whale

#endif
