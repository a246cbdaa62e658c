//===- Processes.cpp - a plan's ranks shared out among MPI processes ------===//

#include "runtime/run/Processes.h"

#include "runtime/checkpoint/Checkpoint.h"

#include <cstring>

namespace whale {

std::string layoutProcesses(int32_t process, int32_t processes, int64_t devices,
                            ProcessLayout &out) {
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

bool gatherDeviceFigures(
    whale_rt_comm *comm, const ProcessLayout &layout,
    const std::vector<OpenedRank> &ranks, size_t width,
    const std::function<void(const OpenedRank &, double *)> &figuresOf,
    std::vector<double> &perDevice) {
  // This process's devices are a block: its ranks' figures at their
  // places in it, then every block in process order.
  std::vector<double> mine(width * static_cast<size_t>(layout.perProcess), 0.0);
  const int64_t base = layout.process * layout.perProcess;
  for (const OpenedRank &rank : ranks)
    figuresOf(rank, mine.data() + (rank.place.device - base) * width);
  return gatherFromProcesses(comm, layout, mine, perDevice);
}

std::string gatherRankLosses(whale_rt_comm *comm, const ProcessLayout &layout,
                             const std::vector<OpenedRank> &ranks,
                             const std::vector<double> &own,
                             const std::vector<int64_t> &grid,
                             std::vector<double> &losses, bool *stop) {
  // Each device's loss, and with `stop` its process's stop flag beside it.
  const size_t width = stop ? 2 : 1;
  size_t at = 0;
  std::vector<double> perDevice;
  if (!gatherDeviceFigures(
          comm, layout, ranks, width,
          [&](const OpenedRank &, double *out) {
            out[0] = at < own.size() ? own[at] : 0.0;
            if (stop)
              out[1] = *stop ? 1.0 : 0.0;
            ++at;
          },
          perDevice))
    return "the processes could not exchange their losses";
  losses.assign(grid.size(), 0.0);
  for (size_t i = 0; i < grid.size(); ++i)
    losses[i] = perDevice[static_cast<size_t>(grid[i]) * width];
  if (stop)
    for (size_t d = 1; d < perDevice.size(); d += width)
      *stop = *stop || perDevice[d] != 0.0;
  return "";
}

bool shareFromProcessZero(whale_rt_comm *comm, const ProcessLayout &layout,
                          int64_t tag, std::string &text) {
  if (!layout.active() || layout.processes == 1)
    return true;
  const int32_t me = static_cast<int32_t>(layout.process * layout.perProcess);
  // Its length, then its bytes padded to whole words (what the transport
  // moves).
  int64_t length = static_cast<int64_t>(text.size());
  if (layout.process == 0) {
    std::vector<char> padded(text.begin(), text.end());
    padded.resize((padded.size() + 3) / 4 * 4, '\0');
    for (int32_t p = 1; p < layout.processes; ++p) {
      const int32_t to = static_cast<int32_t>(p * layout.perProcess);
      if (whale_rt_comm_driver_send(comm, me, to, tag, &length,
                                    sizeof length) != WHALE_RT_OK ||
          whale_rt_comm_driver_send(comm, me, to, tag + 1, padded.data(),
                                    static_cast<int64_t>(padded.size())) !=
              WHALE_RT_OK)
        return false;
    }
    return true;
  }
  if (whale_rt_comm_driver_recv(comm, me, 0, tag, &length, sizeof length) !=
          WHALE_RT_OK ||
      length < 0)
    return false;
  std::vector<char> padded(static_cast<size_t>((length + 3) / 4 * 4));
  if (whale_rt_comm_driver_recv(comm, me, 0, tag + 1, padded.data(),
                                static_cast<int64_t>(padded.size())) !=
      WHALE_RT_OK)
    return false;
  text.assign(padded.data(), static_cast<size_t>(length));
  return true;
}

std::string gatherStateOnHosts(whale_rt_comm *comm, const ProcessLayout &layout,
                               whale_rt_context *host,
                               std::vector<OpenedRank> &ranks,
                               const ProgramOf &programOf, int stateCount,
                               int64_t stages, int64_t replicas,
                               const std::vector<int64_t> &grid) {
  if (std::string err = copyRanksState(host, ranks, programOf, stateCount,
                                       /*toRanks=*/false);
      !err.empty())
    return err;
  if (!layout.active() || layout.processes == 1)
    return "";
  // Each tensor whole from every process (a part of it filled where this
  // process holds it), then each part taken from its holder's copy: the
  // bytes as they are, no arithmetic.
  const size_t processes = static_cast<size_t>(layout.processes);
  for (int64_t s = 0; s < stages; ++s) {
    const StageProgram &program =
        programOf(RankSlot{s, 0, grid[s * replicas], 0});
    for (const Parameter &p : program.params) {
      const int64_t parts = p.shards > 1 ? p.shards : 1;
      for (int st = -1; st < stateCount; ++st) {
        whale_rt_tensor *t = rankTensor(host, p.name, p.shape, st);
        if (!t)
          return whale_rt_last_error(host);
        int64_t count = 1;
        for (int64_t d : p.shape)
          count *= d;
        auto *mine = static_cast<float *>(whale_rt_tensor_data(t));
        std::vector<float> all(static_cast<size_t>(count) * processes);
        if (whale_rt_comm_gather_floats(
                comm, static_cast<int32_t>(layout.process * layout.perProcess),
                mine, count, all.data()) != WHALE_RT_OK)
          return "the processes could not exchange '" + p.name + "'";
        for (int64_t k = 0; k < parts; ++k) {
          // Sharded state (and a parameter sharded with it) comes from
          // its owner's process.
          const int64_t replica =
              (st >= 0 || p.valueOwned) && p.stateOwner >= 0
                  ? (p.ownerShards > 0 ? p.stateOwner * p.ownerShards + k
                                       : p.stateOwner)
                  : k;
          const int32_t holder = layout.ownerOf(grid[s * replicas + replica]);
          if (holder == layout.process)
            continue;
          PartRuns runs;
          if (std::string err = partRuns(p, k, runs); !err.empty())
            return err;
          const char *from = reinterpret_cast<const char *>(
              all.data() + static_cast<size_t>(holder) * count);
          char *to = reinterpret_cast<char *>(mine);
          for (int64_t o = 0; o < runs.outer; ++o)
            std::memcpy(to + o * runs.stride + runs.offset,
                        from + o * runs.stride + runs.offset,
                        static_cast<size_t>(runs.block));
        }
      }
    }
  }
  return "";
}

} // namespace whale
