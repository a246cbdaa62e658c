//===- Processes.h - a plan's ranks shared out among MPI processes -*- C++
//-*-===//
//
// Under mpirun (or srun) a job's N devices go to its P processes in equal
// consecutive blocks: process p runs the ranks of devices [p N/P, (p+1)
// N/P), as threads, and talks to the others' through the MPI transport
// (several ranks per process: runtime/comm/MpiSharedRanks.h). One process
// per device is the case N = P. Both drivers (whale run, whale-exec) read
// the layout and exchange the driver's figures through these functions.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_RUN_PROCESSES_H
#define WHALE_RUNTIME_RUN_PROCESSES_H

#include "runtime/WhaleRuntime.h"
#include "runtime/run/RankStep.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace whale {

struct ProcessLayout {
  int32_t process = -1, processes = 0; ///< -1, 0: no MPI job
  int64_t perProcess = 1;              ///< devices (ranks) per process

  bool active() const { return process >= 0; }
  /// Whether this process runs the rank of `device` (every one without
  /// MPI).
  bool owns(int64_t device) const {
    return !active() || device / perProcess == process;
  }
  int32_t ownerOf(int64_t device) const {
    return static_cast<int32_t>(device / perProcess);
  }
};

/// The layout of `devices` over an MPI job of `processes` processes (this
/// one `process`); "" or why not (the processes must divide the devices).
std::string layoutProcesses(int32_t process, int32_t processes, int64_t devices,
                            ProcessLayout &out);

/// The communicator of the job's ranks (an MPI one over `mpiComm`, NULL:
/// the world), null when it cannot be made.
whale_rt_comm *processCommunicator(const ProcessLayout &layout,
                                   const void *mpiComm, double timeoutSeconds);

/// `mine.size()` doubles from every process, process p's at
/// all[p * mine.size()], on every process; false when the exchange failed.
bool gatherFromProcesses(whale_rt_comm *comm, const ProcessLayout &layout,
                         const std::vector<double> &mine,
                         std::vector<double> &all);

/// Per device of the job, `width` figures of its rank, from each
/// process's own ranks (`figuresOf(rank, out)` fills a rank's): the
/// devices' figures in device order (width each); false when the exchange
/// failed.
bool gatherDeviceFigures(
    whale_rt_comm *comm, const ProcessLayout &layout,
    const std::vector<OpenedRank> &ranks, size_t width,
    const std::function<void(const OpenedRank &, double *)> &figuresOf,
    std::vector<double> &perDevice);

/// `text` of process 0 on every process (the driver's message, tagged
/// `tag`, a number above any the rank programs use); false when it could
/// not be told.
bool shareFromProcessZero(whale_rt_comm *comm, const ProcessLayout &layout,
                          int64_t tag, std::string &text);

/// Every parameter and its `stateCount` optimizer states whole in `host`,
/// as copyRanksState gathers them in one process; under MPI on every
/// process: each gathers its own ranks' parts, and every part then comes
/// from the process whose rank holds it (the first shard group of its
/// stage: replica k holds part k), bit for bit. `stages` x `replicas` is
/// the grid, grid[s * replicas + r] a device.
std::string gatherStateOnHosts(whale_rt_comm *comm, const ProcessLayout &layout,
                               whale_rt_context *host,
                               std::vector<OpenedRank> &ranks,
                               const ProgramOf &programOf, int stateCount,
                               int64_t stages, int64_t replicas,
                               const std::vector<int64_t> &grid);

/// The loss of every rank of the plan in rank order (grid[i] the device of
/// rank i), from this process's ranks' `own` losses (in `ranks` order) and
/// the others'; "" or why not. With `stop`, each process's `*stop` (a
/// signal asked it to stop) travels with its losses, and `*stop` comes
/// back true when any process's was: the processes agree to stop after the
/// same step without a message of their own.
std::string gatherRankLosses(whale_rt_comm *comm, const ProcessLayout &layout,
                             const std::vector<OpenedRank> &ranks,
                             const std::vector<double> &own,
                             const std::vector<int64_t> &grid,
                             std::vector<double> &losses, bool *stop = nullptr);

} // namespace whale

#endif
