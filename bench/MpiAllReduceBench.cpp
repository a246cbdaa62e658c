//===- MpiAllReduceBench.cpp - all-reduce through Whale against MPI's
//------===//
//
// Bus bandwidth of a float all-reduce by message size: Whale's MPI
// transport (an all-to-all, sums in group order, an all-gather: the same
// bits as one process) against MPI_Allreduce called directly, in
// alternating rounds so the machine's drift falls on both alike. Bus
// bandwidth is 2 (n-1)/n x bytes / time, as NCCL's tests report it.
//
//   mpirun -np 2 build/bin/whale-mpi-allreduce-bench
//
//===----------------------------------------------------------------------===//

#include "runtime/comm/MpiCommunicator.h"

#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <vector>

using namespace whale::rt;

namespace {

/// Seconds of one all-reduce of `count` floats, the median of `rounds`.
template <class F> double medianSeconds(int rounds, F &&once) {
  std::vector<double> t;
  for (int r = 0; r < rounds; ++r) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    once();
    double mine = MPI_Wtime() - t0, slowest = 0;
    MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    t.push_back(slowest);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

} // namespace

int main(int argc, char **argv) {
  int provided = 0, rank = 0, size = 1;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::string error;
  auto comm = MpiCommunicator::create(std::chrono::seconds(120), error);
  if (!comm) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 1;
  }
  std::vector<int> world(size);
  std::iota(world.begin(), world.end(), 0);
  if (rank == 0)
    std::printf("%d processes; bus bandwidth GB/s, median of rounds\n"
                "%12s %12s %12s %10s %10s %8s\n",
                size, "bytes", "whale us", "MPI us", "whale", "MPI", "ratio");
  for (int64_t bytes = 4096; bytes <= (int64_t(64) << 20); bytes *= 4) {
    const int64_t count = bytes / 4;
    std::vector<float> a(count, 1.0f + rank), b(count, 1.0f + rank);
    const int rounds = bytes <= (1 << 20) ? 41 : 11;
    // Alternate: one round of each, `rounds` times.
    std::vector<double> ours, theirs;
    for (int r = 0; r < rounds; ++r) {
      ours.push_back(medianSeconds(1, [&] {
        comm->allReduce(rank, world, DType::F32, a.data(), count);
      }));
      theirs.push_back(medianSeconds(1, [&] {
        MPI_Allreduce(MPI_IN_PLACE, b.data(), static_cast<int>(count),
                      MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      }));
    }
    std::sort(ours.begin(), ours.end());
    std::sort(theirs.begin(), theirs.end());
    double tw = ours[rounds / 2], tm = theirs[rounds / 2];
    double factor = 2.0 * (size - 1) / size * double(bytes) / 1e9;
    if (rank == 0)
      std::printf("%12lld %12.1f %12.1f %10.2f %10.2f %8.3f\n",
                  static_cast<long long>(bytes), tw * 1e6, tm * 1e6,
                  factor / tw, factor / tm, tm / tw);
  }
  comm.reset();
  MPI_Finalize();
  return 0;
}
