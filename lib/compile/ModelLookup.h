//===- ModelLookup.h - the model a command works on --------------*- C++
//-*-===//

#ifndef WHALE_LIB_COMPILE_MODELLOOKUP_H
#define WHALE_LIB_COMPILE_MODELLOOKUP_H

#include "whale/Interpreter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <string>

namespace whale {

/// The model named `name`, or with no name the first model with a train
/// block. With `needsTrainBlock` the model must have one. A null op, with
/// `error` saying why, when there is none.
mlir::func::FuncOp findModel(Interpreter &interp, const std::string &name,
                             bool needsTrainBlock, std::string &error);

} // namespace whale

#endif
