//===- Bundle.h - a plan compiled ahead of time ------------------*- C++
//-*-===//
//
// `whale compile --emit=bundle`: the model planned over a cluster, its rank
// programs lowered and compiled to native shared objects (one per
// micro-batch size), and a manifest (runtime/bundle/PlanManifest.h) that says
// the rest. tools/whale-exec runs the folder with nothing but the runtime:
// a machine that runs it needs no MLIR and no LLVM.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_LIB_COMPILE_BUNDLE_H
#define WHALE_LIB_COMPILE_BUNDLE_H

#include "whale/Interpreter.h"
#include "whale/Train.h"

#include <cstdint>
#include <string>
#include <vector>

namespace whale {

struct BundleReport {
  /// The files written into the folder, with their sizes in bytes.
  std::vector<std::pair<std::string, int64_t>> files;
  int64_t ranks = 0;
};

/// Compiles the train step of `options.model` planned over `options.cluster`
/// (cpu:1 when empty) into folder `dir` (made when missing), with the
/// run's overrides (steps, seed, threads, even plan, trace sites) baked
/// in; false with `error` when planning, compiling or linking fails.
/// Linking the shared objects takes the system's C compiler driver (cc).
bool compileBundle(Interpreter &interp, const TrainOptions &options,
                   const std::string &dir, BundleReport &report,
                   std::string &error);

} // namespace whale

#endif
