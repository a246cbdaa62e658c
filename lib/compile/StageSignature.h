//===- StageSignature.h - what a planned stage program takes and makes -*- C++
//-*-===//

#ifndef WHALE_LIB_COMPILE_STAGESIGNATURE_H
#define WHALE_LIB_COMPILE_STAGESIGNATURE_H

#include "runtime/bundle/PlanManifest.h"

#include "whale/Interpreter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringMap.h"

#include <string>

namespace whale {

/// The entry, inputs and parameters of stage program `fn` (a function of a
/// module of rank programs); false with `error` for an input that is not
/// an f32 or i32 tensor.
bool describeStage(mlir::func::FuncOp fn, StageProgram &out,
                   std::string &error);

/// Where stage program `fn` keeps each parameter's optimizer state when it
/// is sharded over a group (-whale-shard-optimizer): by parameter name,
/// with `stateOwner` and `ownerShards` set as Parameter reads them.
llvm::StringMap<Parameter> stateOwners(mlir::func::FuncOp fn);

/// The script's models as the host evaluates them (held-out losses): a
/// copy of `interp`'s module with attention fused, as the rank programs
/// have it; null when the pass fails.
mlir::OwningOpRef<mlir::ModuleOp> hostForward(Interpreter &interp);

} // namespace whale

#endif
