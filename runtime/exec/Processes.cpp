//===- Processes.cpp - a plan's ranks shared out among MPI processes ------===//

#include "runtime/exec/Processes.h"

namespace whale {

std::string layoutProcesses(int32_t process, int32_t processes,
                            int64_t devices, ProcessLayout &out) {
  if (processes < 1 || devices % processes != 0)
    return "the MPI world has " + std::to_string(processes) +
           " processes for " + std::to_string(devices) +
           " devices: each process runs the same number of ranks (start " +
           "a number of processes that divides the devices)";
  out.process = process;
  out.processes = processes;
  out.perProcess = devices / processes;
  return "";
}

whale_rt_comm *processCommunicator(const ProcessLayout &layout,
                                   const void *mpiComm, double timeoutSeconds) {
  return whale_rt_comm_create_mpi_ranks(
      mpiComm, static_cast<int32_t>(layout.perProcess), timeoutSeconds);
}

bool gatherFromProcesses(whale_rt_comm *comm, const ProcessLayout &layout,
                         const std::vector<double> &mine,
                         std::vector<double> &all) {
  all.assign(mine.size() * static_cast<size_t>(layout.processes), 0.0);
  return whale_rt_comm_gather_doubles(
             comm, static_cast<int32_t>(layout.process * layout.perProcess),
             mine.data(), static_cast<int64_t>(mine.size()),
             all.data()) == WHALE_RT_OK;
}

bool gatherDeviceFigures(whale_rt_comm *comm, const ProcessLayout &layout,
                         const std::vector<OpenedRank> &ranks, size_t width,
                         const std::function<void(const OpenedRank &,
                                                  double *)> &figuresOf,
                         std::vector<double> &perDevice) {
  // This process's devices are a block: its ranks' figures at their
  // places in it, then every block in process order.
  std::vector<double> mine(width * static_cast<size_t>(layout.perProcess),
                           0.0);
  const int64_t base = layout.process * layout.perProcess;
  for (const OpenedRank &rank : ranks)
    figuresOf(rank, mine.data() + (rank.place.device - base) * width);
  return gatherFromProcesses(comm, layout, mine, perDevice);
}

std::string gatherRankLosses(whale_rt_comm *comm, const ProcessLayout &layout,
                             const std::vector<OpenedRank> &ranks,
                             const std::vector<double> &own,
                             const std::vector<int64_t> &grid,
                             std::vector<double> &losses) {
  size_t at = 0;
  std::vector<double> perDevice;
  if (!gatherDeviceFigures(comm, layout, ranks, 1,
                           [&](const OpenedRank &, double *out) {
                             *out = at < own.size() ? own[at] : 0.0;
                             ++at;
                           },
                           perDevice))
    return "the processes could not exchange their losses";
  losses.assign(grid.size(), 0.0);
  for (size_t i = 0; i < grid.size(); ++i)
    losses[i] = perDevice[static_cast<size_t>(grid[i])];
  return "";
}

} // namespace whale
