//===- Planner.h - from a loaded model to its rank programs -------*- C++
//-*-===//
//
// Runs the planning passes over a model for a number of devices, elaborates
// the script again at the plan's micro-batch (the static shapes one rank
// sees), and builds one rank program per pipeline stage. What `whale
// compile --emit=planned|ranks`, `whale plan` and `whale run --cluster` use.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_LIB_PLANNER_H
#define WHALE_LIB_PLANNER_H

#include "whale/Interpreter.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <memory>
#include <string>
#include <vector>

namespace whale {

struct PlannedModel {
  std::string model;
  /// The script at the micro-batch; owns the context of both modules.
  std::unique_ptr<Interpreter> micro;
  /// The model with its TaskGraphs, virtual devices, schedule and buckets.
  mlir::OwningOpRef<mlir::ModuleOp> planned;
  /// One function per stage (`<model>_stage<s>`), whale dialect.
  mlir::OwningOpRef<mlir::ModuleOp> ranks;

  int64_t devices = 1, stages = 1, replicas = 1;
  int64_t globalBatch = 0, microBatches = 1, microBatch = 0;
  std::string schedule;
  /// grid[s * replicas + r]: the device of stage s, replica r.
  std::vector<int64_t> grid;
};

/// Plans the model `modelName` (empty: the first with a train block) of
/// the loaded program over `devices` devices. On failure returns false with
/// the planner's messages (file:line:col: error: ...).
bool planModel(Interpreter &interp, const std::string &modelName,
               int64_t devices, PlannedModel &out, std::string &error);

} // namespace whale

#endif
