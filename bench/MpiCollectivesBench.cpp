//===- MpiCollectivesBench.cpp - Whale's MPI collectives against MPI's ----===//
//
// Bus bandwidth by message size of the three collectives fully sharded data
// parallelism lives on, through Whale's MPI transport and through the
// library called directly, in alternating rounds so the machine's drift
// falls on both alike:
// - all-reduce (Whale: each chunk summed by one member in group order, the
//   same bits as one process, and the sums shared) against MPI_Allreduce;
// - all-gather against MPI_Allgather;
// - reduce-scatter (the first half of Whale's all-reduce) against
//   MPI_Reduce_scatter_block.
// Processes on one host move Whale's through the group's shared memory
// (WHALE_MPI_SHARED_MEMORY=0: through MPI's calls, the data staged).
// Bus bandwidth is as NCCL's tests report it: 2 (n-1)/n x bytes / time for
// the all-reduce, (n-1)/n x bytes / time for the others, `bytes` the whole
// vector (the all-reduce's, the gathered result, the scattered input).
// Each collective's result is checked before it is timed.
//
//   mpirun -np 2 build/bin/whale-mpi-collectives-bench [OP] [MIN_BYTES]
//
// OP: all_reduce, all_gather, reduce_scatter or all (the default);
// MIN_BYTES: the smallest size (default 1 MiB), up to 64 MiB by 4x.
//
//===----------------------------------------------------------------------===//

#include "runtime/comm/MpiCommunicator.h"

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

using namespace whale::rt;

namespace {

/// Seconds of one call of `once`, the slowest process's.
double secondsOf(const std::function<void()> &once) {
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  once();
  double mine = MPI_Wtime() - t0, slowest = 0;
  MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return slowest;
}

struct Collective {
  const char *name;
  double busFactor; ///< bus bytes per vector byte, times n / (n - 1)
  /// Whale's call and the library's, on `count` floats of the whole vector.
  std::function<Status(int64_t)> whale;
  std::function<void(int64_t)> library;
  /// "" when both gave the expected result for `count`.
  std::function<std::string(int64_t)> check;
};

int fail(int rank, const std::string &why) {
  if (rank == 0)
    std::fprintf(stderr, "whale-mpi-collectives-bench: %s\n", why.c_str());
  MPI_Abort(MPI_COMM_WORLD, 1);
  return 1;
}

} // namespace

int main(int argc, char **argv) {
  int provided = 0, rank = 0, size = 1;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const std::string op = argc > 1 ? argv[1] : "all";
  const int64_t minBytes = argc > 2 ? std::atoll(argv[2]) : (int64_t(1) << 20);
  if (op != "all" && op != "all_reduce" && op != "all_gather" &&
      op != "reduce_scatter")
    return fail(rank, "OP is all_reduce, all_gather, reduce_scatter or all");
  if (minBytes < 4 * size || minBytes > (int64_t(64) << 20))
    return fail(rank, "MIN_BYTES is from 4 x processes to 64 MiB");
  std::string error;
  auto comm = MpiCommunicator::create(std::chrono::seconds(120), error);
  if (!comm)
    return fail(rank, error);
  std::vector<int> world(size);
  std::iota(world.begin(), world.end(), 0);
  const int64_t n = size;

  // Buffers of the largest size, reused.
  const int64_t most = (int64_t(64) << 20) / 4;
  std::vector<float> in(most), out(most), mpiIn(most), mpiOut(most);
  auto fillIn = [&](int64_t count) {
    for (int64_t i = 0; i < count; ++i)
      in[i] = mpiIn[i] = float(rank + 1) + float(i % 7);
  };

  std::vector<Collective> collectives = {
      {"all_reduce", 2.0,
       [&](int64_t count) {
         return comm->allReduce(rank, world, DType::F32, in.data(), count);
       },
       [&](int64_t count) {
         MPI_Allreduce(MPI_IN_PLACE, mpiIn.data(), int(count), MPI_FLOAT,
                       MPI_SUM, MPI_COMM_WORLD);
       },
       [&](int64_t count) -> std::string {
         for (int64_t i = 0; i < count; ++i) {
           float want = float(n * (n + 1) / 2) + float(n) * float(i % 7);
           if (!(in[i] == want) || !(mpiIn[i] == want))
             return "all_reduce: element " + std::to_string(i) + " is " +
                    std::to_string(in[i]) + " / " + std::to_string(mpiIn[i]) +
                    ", not " + std::to_string(want);
         }
         return "";
       }},
      {"all_gather", 1.0,
       [&](int64_t count) {
         return comm->allGather(rank, world, DType::F32, in.data(), count / n,
                                out.data());
       },
       [&](int64_t count) {
         MPI_Allgather(mpiIn.data(), int(count / n), MPI_FLOAT, mpiOut.data(),
                       int(count / n), MPI_FLOAT, MPI_COMM_WORLD);
       },
       [&](int64_t count) -> std::string {
         const int64_t part = count / n;
         for (int64_t i = 0; i < part * n; ++i) {
           float want = float(i / part + 1) + float((i % part) % 7);
           if (!(out[i] == want) || !(mpiOut[i] == want))
             return "all_gather: element " + std::to_string(i) + " is " +
                    std::to_string(out[i]) + " / " + std::to_string(mpiOut[i]);
         }
         return "";
       }},
      {"reduce_scatter", 1.0,
       [&](int64_t count) {
         return comm->reduceScatter(rank, world, DType::F32, in.data(),
                                    count / n, out.data());
       },
       [&](int64_t count) {
         MPI_Reduce_scatter_block(mpiIn.data(), mpiOut.data(), int(count / n),
                                  MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
       },
       [&](int64_t count) -> std::string {
         const int64_t part = count / n;
         for (int64_t i = 0; i < part; ++i) {
           float want =
               float(n * (n + 1) / 2) + float(n) * float((rank * part + i) % 7);
           if (!(out[i] == want) || !(mpiOut[i] == want))
             return "reduce_scatter: element " + std::to_string(i) + " is " +
                    std::to_string(out[i]) + " / " + std::to_string(mpiOut[i]);
         }
         return "";
       }},
  };

  if (rank == 0)
    std::printf("%d processes; bus bandwidth GB/s, median of rounds\n"
                "%-15s %10s %10s %10s %8s %8s %7s\n",
                size, "collective", "bytes", "whale us", "MPI us", "whale",
                "MPI", "ratio");
  for (const Collective &c : collectives) {
    if (op != "all" && op != c.name)
      continue;
    for (int64_t bytes = minBytes; bytes <= (int64_t(64) << 20); bytes *= 4) {
      const int64_t count = bytes / 4 / n * n;
      fillIn(count);
      if (Status st = c.whale(count); !st)
        return fail(rank, std::string(c.name) + ": " + st.message());
      c.library(count);
      if (std::string err = c.check(count); !err.empty())
        return fail(rank, err);
      const int rounds = bytes <= (1 << 20) ? 21 : 9;
      std::vector<double> ours, theirs;
      bool failed = false;
      for (int r = 0; r < rounds; ++r) {
        ours.push_back(secondsOf([&] { failed = failed || !c.whale(count); }));
        theirs.push_back(secondsOf([&] { c.library(count); }));
      }
      if (failed)
        return fail(rank, std::string(c.name) + ": a timed call failed");
      std::sort(ours.begin(), ours.end());
      std::sort(theirs.begin(), theirs.end());
      const double tw = ours[rounds / 2], tm = theirs[rounds / 2];
      const double bus =
          c.busFactor * double(n - 1) / double(n) * double(count * 4) / 1e9;
      if (!std::isfinite(tw) || !std::isfinite(tm) || tw <= 0 || tm <= 0)
        return fail(rank, std::string(c.name) + ": a time is not finite");
      if (rank == 0)
        std::printf("%-15s %10lld %10.1f %10.1f %8.2f %8.2f %7.3f\n", c.name,
                    static_cast<long long>(count * 4), tw * 1e6, tm * 1e6,
                    bus / tw, bus / tm, tm / tw);
      std::fflush(stdout);
    }
  }
  comm.reset();
  MPI_Finalize();
  return 0;
}
