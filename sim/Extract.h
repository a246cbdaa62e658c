//===- Extract.h - events from the rank programs -------------------*- C++
//-*-===//
//
// Reads the rank programs `-whale-rank-programs` builds (the functions the
// runtime runs, `<model>_stage<s>`) op by op, in program order, into
// StagePrograms over a shared EventTable. Compute ops are priced through
// the cost interface; send, recv, all_reduce, the shard ops and clipping
// become communication steps with their sizes and groups.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_SIM_EXTRACT_H
#define WHALE_SIM_EXTRACT_H

#include "sim/EventProgram.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace whale::sim {

/// The programs of `model`'s `stages` stages in `ranks`, their events added
/// to `table`. False, with `error`, when a stage's function is missing or
/// holds an op the simulator cannot price. With `firstOps`, the op each new
/// compute event was first read from is kept at the event's index (null for
/// other events), for the profiler to run.
bool extractPrograms(mlir::ModuleOp ranks, const std::string &model,
                     int64_t stages, EventTable &table, ProgramSet &out,
                     std::string &error,
                     std::vector<mlir::Operation *> *firstOps = nullptr);

} // namespace whale::sim

#endif
