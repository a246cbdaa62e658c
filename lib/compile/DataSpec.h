//===- DataSpec.h - a train block's data spec off the model ----*- C++
//-*-===//

#ifndef WHALE_LIB_COMPILE_DATASPEC_H
#define WHALE_LIB_COMPILE_DATASPEC_H

#include "runtime/run/DataSource.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <memory>
#include <string>

namespace whale {

/// `type` (a ranked f32 or i32 tensor) as a TensorSpec; false with `error`
/// for other types.
bool tensorSpecOf(mlir::Type type, TensorSpec &out, std::string &error);

/// What the model's train block names at `key` ("data", or "eval_data" for
/// the held-out samples), its relative paths taken from the script's
/// folder; false with `error` when an input is not f32 or i32.
bool dataSpecOf(mlir::func::FuncOp model, const char *key, DataSpec &out,
                std::string &error);

/// The source the model's train block names (text, tokens, arrays or
/// synthetic), checked against the model's inputs; null with `error` when
/// they do not fit.
std::unique_ptr<DataSource> makeDataSource(mlir::func::FuncOp model,
                                           std::string &error,
                                           const char *key = "data");

} // namespace whale

#endif
