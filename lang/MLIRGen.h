//===- MLIRGen.h - a checked Program to the whale dialect --------*- C++
//-*-===//

#ifndef WHALE_LANG_MLIRGEN_H
#define WHALE_LANG_MLIRGEN_H

#include "lang/Diagnostics.h"
#include "lang/Program.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

namespace whale::lang {

/// Builds one `func.func` per model, with `whale.taskgraph` regions for its
/// blocks and a FileLineColLoc on every op, then verifies the module.
/// Returns null (with a diagnostic) when a model's shapes are not all known
/// or the module does not verify.
mlir::OwningOpRef<mlir::ModuleOp> mlirGen(mlir::MLIRContext &context,
                                          const Program &program,
                                          const SourceManager &sources,
                                          DiagnosticEngine &diags);

} // namespace whale::lang

#endif
