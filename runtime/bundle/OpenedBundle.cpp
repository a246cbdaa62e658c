//===- OpenedBundle.cpp - a compiled plan opened on this process's devices ===//

#include "runtime/bundle/OpenedBundle.h"

#include "runtime/run/CpuLevels.h"
#include "runtime/state/PlanState.h"
#include "support/VectorLevel.h"

#include <algorithm>
#include <thread>

namespace whale {

std::string openProgram(const std::string &folder, const std::string &file,
                        const PlanManifest &m, LoadedLibrary &library) {
  if (std::string bad = checkVectorLevelSetting(); !bad.empty())
    return bad;
  const std::string path = libraryForThisCpu(folder, file);
  return library.open(path, path.substr(folder.size() + 1), m.files);
}

std::string entryOf(const LoadedLibrary &library, const std::string &what,
                    const std::string &symbol, RankEntry &out) {
  out = reinterpret_cast<RankEntry>(library.symbol(symbol));
  return out ? ""
             : "the compiled " + what + " has no program '" + symbol +
                   "' of its own";
}

LocalRanks OpenedBundle::local() {
  return localRanksOf(ranks, m.replicas, processes ? &layout : nullptr,
                      comm.get(), m.grid);
}

std::string readBundle(const std::string &folder,
                       const BundleOverrides &overrides, OpenedBundle &out) {
  out.folder = folder.empty() ? "." : folder;
  std::string error;
  if (!readManifest(out.folder + "/" + kManifestFileName, out.m, error))
    return error;
  PlanManifest &m = out.m;
  TrainSettings &settings = m.settings;
  if (overrides.steps)
    settings.steps = *overrides.steps;
  if (overrides.seed)
    settings.seed = *overrides.seed;
  if (std::string err = settings.checkLength(m.globalBatch); !err.empty())
    return err;
  if (!overrides.dataPath.empty()) {
    if (m.data.kind != "text" && m.data.kind != "tokens")
      return "--data names the corpus of text(...) or tokens(...) data; this "
             "plan's data is " +
             m.data.kind + "(...)";
    m.data.path = overrides.dataPath;
  }
  // Every parameter of the model, stage by stage (replica 0's programs name
  // them all); and the state the ranks hold, as boxes.
  for (int64_t s = 0; s < m.stages; ++s) {
    const std::vector<Parameter> &ps = m.program(s, 0).params;
    out.params.insert(out.params.end(), ps.begin(), ps.end());
  }
  if (!manifestState(m, out.state, error))
    return error;
  return "";
}

std::string openBundle(OpenedBundle &b, const BundleOverrides &overrides,
                       const ProcessWorld &world, uint64_t seed) {
  const PlanManifest &m = b.m;
  b.processes = world.processes;
  const int64_t devices = static_cast<int64_t>(m.devices.size());
  if (world.processes)
    if (std::string err =
            layoutProcesses(world.rank, world.count, devices, b.layout);
        !err.empty())
      return err + " (the plan's)";
  for (const ProgramLibrary &lib : m.libraries) {
    // Built for the best x86-64 level this CPU runs, where the bundle has it.
    auto loaded = std::make_unique<LoadedLibrary>();
    if (std::string err = openProgram(b.folder, lib.file, m, *loaded);
        !err.empty())
      return err;
    b.entries.emplace_back();
    for (const StageProgram &st : lib.stages) {
      RankEntry fn = nullptr;
      if (std::string err =
              entryOf(*loaded, "rank programs " + lib.file, st.entry, fn);
          !err.empty())
        return err;
      b.entries.back().push_back(fn);
    }
    b.libraries.push_back(std::move(loaded));
  }
  b.comm.reset(
      world.processes
          ? processCommunicator(b.layout, world.base, kCommTimeoutSeconds)
          : whale_rt_comm_create(static_cast<int32_t>(devices),
                                 kCommTimeoutSeconds));
  if (!b.comm)
    return "cannot make a communicator for " + std::to_string(devices) +
           " ranks";
  if (!overrides.tracePath.empty()) {
    whale_rt_comm_enable_trace(b.comm.get());
    if (overrides.traceWithoutChecks)
      whale_rt_comm_set_trace_checks(b.comm.get(), 0);
  }
  const int total =
      overrides.threads > 0
          ? overrides.threads
          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int shared =
      std::max<int>(1, total / std::max<int>(1, static_cast<int>(devices)));
  GridShape shape{static_cast<int32_t>(m.stages),
                  static_cast<int32_t>(m.replicas),
                  std::vector<int32_t>(m.grid.begin(), m.grid.end())};
  for (int64_t s = 0; s < m.stages; ++s)
    for (int64_t r = 0; r < m.replicas; ++r) {
      const int64_t device = m.grid[s * m.replicas + r];
      if (!b.layout.owns(device))
        continue; // another process's rank
      const RankDevice &dev = m.devices[device];
      b.ranks.emplace_back();
      if (std::string err =
              openRank(dev.name, dev.threads > 0 ? dev.threads : shared,
                       dev.memory, seed, m.ampBf16, b.comm.get(), shape,
                       RankSlot{s, r, device, m.firstRow(r)},
                       b.entries[m.replicaLibrary[r]][s],
                       m.program(s, r).inputs, b.ranks.back());
          !err.empty())
        return err;
    }
  placeRanks(b.ranks, world.processes);
  return "";
}

std::string checkSameJob(const PlanManifest &current,
                         const PlanManifest &next) {
  if (next.model != current.model)
    return "it is a plan of '" + next.model + "', not of '" + current.model +
           "'";
  if (next.globalBatch != current.globalBatch)
    return "its global batch is " + std::to_string(next.globalBatch) +
           ", not " + std::to_string(current.globalBatch) +
           " (a change of devices keeps the batch and the data order)";
  if (next.data.inputs != current.data.inputs)
    return "its inputs have other shapes or types";
  if (next.settings.stateCount != current.settings.stateCount)
    return "its optimizer keeps another number of tensors per parameter";
  return "";
}

} // namespace whale
