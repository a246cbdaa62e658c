//===- ProcessCheckpoint.cpp - one rank checkpoint set from many processes ===//

#include "runtime/checkpoint/ProcessCheckpoint.h"

#include "runtime/checkpoint/CheckpointSet.h"

#include <vector>

namespace whale {

namespace {

/// Process 0's outcome of a step, told to every process: "" or its error.
bool tellFromProcessZero(whale_rt_comm *comm, const ProcessLayout &layout,
                         int64_t tag, std::string &outcome) {
  std::string told = layout.process == 0 ? "=" + outcome : "";
  if (!shareFromProcessZero(comm, layout, tag, told) || told.empty())
    return false;
  outcome = told.substr(1);
  return true;
}

} // namespace

std::string saveRankCheckpointOnProcesses(whale_rt_comm *comm,
                                          const ProcessLayout &layout,
                                          int64_t tag, const std::string &dir,
                                          const StateCheckpoint &ckpt,
                                          const std::set<int64_t> &own) {
  const bool zero = layout.process == 0;
  // 1. Process 0 clears the staging folder and names the save.
  std::string begun;
  if (zero) {
    begun = rt::beginCheckpointSet(dir);
    begun = begun.empty() ? "1" + newCheckpointSetId() : "0" + begun;
  }
  if (!tellFromProcessZero(comm, layout, tag, begun) || begun.empty())
    return "the processes could not agree to save the checkpoint";
  if (begun[0] != '1')
    return zero ? begun.substr(1)
                : "process 0 could not start the save: " + begun.substr(1);
  const std::string setId = begun.substr(1);

  // 2. Each writes its ranks' files; 3. all learn whether every one did.
  std::string written =
      own.empty() ? ""
                  : writeRankFiles(rt::stagingFolder(dir), ckpt, setId, own);
  std::vector<double> all;
  if (!gatherFromProcesses(comm, layout, {written.empty() ? 1.0 : 0.0}, all))
    written = written.empty() ? "the processes could not confirm their "
                                "checkpoint files"
                              : written;
  for (size_t p = 0; p < all.size() && written.empty(); ++p)
    if (all[p] != 1.0)
      written = "process " + std::to_string(p) +
                " could not write its ranks' checkpoint files";
  if (!written.empty()) {
    if (zero)
      rt::abandonCheckpointSet(dir);
    return written + " (" + dir + " keeps its previous checkpoint)";
  }

  // 4. Process 0 swaps the whole set into place.
  std::string committed;
  if (zero) {
    committed = rt::commitCheckpointSet(dir);
    if (!committed.empty())
      rt::abandonCheckpointSet(dir);
  }
  if (!tellFromProcessZero(comm, layout, tag + 2, committed))
    return "the processes could not learn whether the checkpoint was saved";
  return committed;
}

} // namespace whale
