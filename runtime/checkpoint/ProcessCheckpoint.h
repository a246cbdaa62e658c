//===- ProcessCheckpoint.h - one rank checkpoint set from many processes -*- C++
//-*-===//
//
// Under mpirun each process writes its own ranks' files, and the set must
// still replace the folder as one unit (runtime/checkpoint/CheckpointSet.h):
// process 0 prepares the staging folder and names the save, every process
// writes its files there, all agree that every file is written, and only
// then does process 0 swap the set into place. A process that fails or
// dies before that leaves the previous set whole.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_CHECKPOINT_PROCESSCHECKPOINT_H
#define WHALE_RUNTIME_CHECKPOINT_PROCESSCHECKPOINT_H

#include "runtime/checkpoint/RankCheckpoint.h"
#include "runtime/run/Processes.h"

#include <cstdint>
#include <set>
#include <string>

namespace whale {

/// Saves `ckpt` into `dir` from every process of `layout`, this one
/// writing the files of the ranks in `own`; `tag` and the three tags after
/// it are this save's messages. Every process returns "" or the reason the
/// set was not saved (the folder then keeps its previous set).
std::string saveRankCheckpointOnProcesses(whale_rt_comm *comm,
                                          const ProcessLayout &layout,
                                          int64_t tag, const std::string &dir,
                                          const StateCheckpoint &ckpt,
                                          const std::set<int64_t> &own);

} // namespace whale

#endif
