//===- PlanManifest.h - a compiled plan, without MLIR ------------*- C++
//-*-===//
//
// What `whale compile --emit=bundle` writes beside the rank programs' shared
// objects, and all the runner (tools/whale-exec) knows of the job: the
// plan's grid and batches, each rank's device, each stage's entry point,
// inputs and parameters, the data and the train settings. Reading it checks
// every invariant the runner relies on, so a damaged or hand-edited manifest
// is an error with its place named, never an out-of-bounds copy.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_BUNDLE_PLANMANIFEST_H
#define WHALE_RUNTIME_BUNDLE_PLANMANIFEST_H

#include "runtime/bundle/BundleFiles.h"
#include "runtime/checkpoint/Checkpoint.h"
#include "runtime/run/DataSource.h"
#include "runtime/run/TrainSettings.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace whale {

inline constexpr const char *kManifestFileName = "plan.json";
inline constexpr int kManifestVersion = 1;

/// One stage's rank program: its symbol, inputs (the model's, at its
/// replica's rows) and the parameters it makes.
struct StageProgram {
  std::string entry;
  std::vector<TensorSpec> inputs;
  std::vector<Parameter> params;
  /// Ranks that hold parts of its sharded parameters (1: none sharded).
  int64_t shards = 1;
};

/// A shared object of rank programs, one per stage, for the replicas of
/// one micro-batch size.
struct ProgramLibrary {
  std::string file; ///< beside the manifest
  std::vector<StageProgram> stages;
};

/// The device a rank runs on, as the runtime opens it.
struct RankDevice {
  std::string name; ///< "cpu:0", "cuda:1", ...
  /// 0: an equal share of the running machine's cores (or of the
  /// runner's --threads) with the other devices that name none.
  int threads = 0;
  int64_t memory = 0; ///< bytes the allocator allows; 0: no limit
  /// Where it is, as the cluster named it: its node, and the device as
  /// "node/kind:index" (the same for the same device in two plans), which
  /// rank checkpoints record. A manifest without them (an older bundle):
  /// "localhost" and its kind's index there.
  std::string node, place;
};

/// Held-out evaluation (eval_every): the model's forward pass compiled for
/// the host, run on the gathered parameters over eval_data's first batches.
struct EvalProgram {
  std::string file;  ///< beside the manifest
  std::string entry; ///< int32_t entry(ctx, inputs, &loss)
  DataSpec data;
};

struct PlanManifest {
  std::string model;
  TrainSettings settings;
  bool ampBf16 = false;
  int64_t stages = 1, replicas = 1, globalBatch = 1;
  /// grid[s * replicas + r]: the device of stage s, replica r.
  std::vector<int64_t> grid;
  /// Rows of the global batch per replica, in order (runtime/run/
  /// BatchRows.h); `rowGroup` consecutive replicas read the same rows.
  std::vector<int64_t> localBatches;
  int64_t rowGroup = 1;
  std::vector<RankDevice> devices;
  DataSpec data;
  std::vector<ProgramLibrary> libraries;
  /// The library each replica runs.
  std::vector<int64_t> replicaLibrary;
  /// Present exactly when settings.evalEvery > 0.
  std::optional<EvalProgram> eval;
  /// Every shared object beside the manifest (each library, the eval
  /// program, their builds for each CPU level), with its size and
  /// checksum: nothing else is loaded.
  std::vector<BundleFile> files;

  /// The first row of replica r in the global batch.
  int64_t firstRow(int64_t replica) const;
  /// The stage program of stage s, replica r.
  const StageProgram &program(int64_t stage, int64_t replica) const {
    return libraries[replicaLibrary[replica]].stages[stage];
  }
};

/// Writes `m` as JSON to `path`; "" or why not.
std::string writeManifest(const PlanManifest &m, const std::string &path);

/// Reads and checks the manifest `text` (read from `source`, named in
/// errors); false with `error` naming the field and what was wrong.
bool parseManifest(const std::string &text, const std::string &source,
                   PlanManifest &out, std::string &error);

/// Reads and checks the manifest at `path`.
bool readManifest(const std::string &path, PlanManifest &out,
                  std::string &error);

} // namespace whale

#endif
