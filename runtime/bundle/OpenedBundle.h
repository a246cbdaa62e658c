//===- OpenedBundle.h - a compiled plan opened on this process's devices -*- C++
//-*-===//
//
// What `whale-exec` runs with under one compiled plan: its manifest (the
// run's overrides applied), its rank programs loaded, a communicator, a
// context per rank this process runs, and the state those ranks hold (as
// boxes, runtime/state/PlanState.h). A run has one at a time; an elastic
// change opens the next plan's before it lets go of the last.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_BUNDLE_OPENEDBUNDLE_H
#define WHALE_RUNTIME_BUNDLE_OPENEDBUNDLE_H

#include "runtime/bundle/BundleFiles.h"
#include "runtime/bundle/PlanManifest.h"
#include "runtime/checkpoint/RankFiles.h"
#include "runtime/run/Processes.h"
#include "runtime/run/RankStep.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace whale {

/// The processes of an mpirun (or none: one process runs every rank).
struct ProcessWorld {
  bool processes = false;
  int32_t rank = -1, count = 0;
  /// The MPI communicator the processes share: null for MPI's world, the
  /// survivors' after processes were lost.
  const void *base = nullptr;
};

struct OpenedBundle {
  std::string folder;
  PlanManifest m;
  /// The rank programs; their calls into the runtime resolve against this
  /// process, which exports the runtime's C ABI.
  std::vector<std::unique_ptr<LoadedLibrary>> libraries;
  std::vector<std::vector<RankEntry>> entries; ///< per library, per stage
  /// Under mpirun: this process runs its block of the plan's devices.
  bool processes = false;
  ProcessLayout layout;
  std::unique_ptr<whale_rt_comm, void (*)(whale_rt_comm *)> comm{
      nullptr, whale_rt_comm_destroy};
  std::vector<OpenedRank> ranks; ///< this process's, in rank order
  /// The state the plan's ranks hold, and every parameter of the model
  /// stage by stage (what a single-file checkpoint holds).
  StateCollection state;
  std::vector<Parameter> params;

  ~OpenedBundle() { ranks.clear(); } // before the communicator

  /// The stage program of a rank.
  const StageProgram &programOf(const RankSlot &slot) const {
    return m.program(slot.stage, slot.replica);
  }
  /// This process's ranks, for rank files and moves of state.
  LocalRanks local();
};

/// The run's settings that override a compiled plan's.
struct BundleOverrides {
  std::optional<int64_t> steps;
  std::optional<uint64_t> seed;
  std::string dataPath; ///< a text or tokens corpus in place of the plan's
  int threads = 0;      ///< in all, for devices that name none (0: all)
  std::string tracePath;
  bool traceWithoutChecks = false;
};

/// Reads the manifest of the compiled plan in `folder` into `out.m` and
/// applies `overrides`; "" or what is wrong.
std::string readBundle(const std::string &folder,
                       const BundleOverrides &overrides, OpenedBundle &out);

/// Loads `b`'s rank programs, makes its communicator and opens this
/// process's ranks (every rank, or under mpirun its block of devices) with
/// `seed`; "" or why not.
std::string openBundle(OpenedBundle &b, const BundleOverrides &overrides,
                       const ProcessWorld &world, uint64_t seed);

/// The library `file` of the bundle in `folder` that this CPU runs best,
/// loaded once its checksum is the manifest's.
std::string openProgram(const std::string &folder, const std::string &file,
                        const PlanManifest &m, LoadedLibrary &library);

/// An entry point the library itself defines; "" or why not.
std::string entryOf(const LoadedLibrary &library, const std::string &what,
                    const std::string &symbol, RankEntry &out);

/// "" when `next` can take over a run of `current`: the same model, global
/// batch, inputs and optimizer; else why not.
std::string checkSameJob(const PlanManifest &current, const PlanManifest &next);

} // namespace whale

#endif
