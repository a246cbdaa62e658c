//===- MpiSharedRanksTest.cpp - several ranks in each MPI process ---------===//
//
// Run with MpiCommunicatorTest.cpp as three processes (`mpirun -np 3
// whale-mpi-tests`), each holding two ranks (threads): six ranks, rank r in
// process r / 2. Every collective over groups within a process, across
// processes and in shuffled orders gives the bits of the in-process
// transport; groups with their leaders in one process exchange at once;
// messages between processes match by sender, receiver and tag; waits end
// in errors.
//
//===----------------------------------------------------------------------===//

#include "runtime/comm/MpiCommunicator.h"

#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <thread>

using namespace whale::rt;
using namespace std::chrono_literals;

namespace {

constexpr int kPerProcess = 2;

std::unique_ptr<MpiCommunicator> shared(std::chrono::milliseconds timeout = 5s) {
  std::string error;
  std::unique_ptr<MpiCommunicator> comm =
      MpiCommunicator::create(timeout, error, nullptr, kPerProcess);
  EXPECT_TRUE(comm) << error;
  return comm;
}

/// Runs `body` on a thread per rank of this process, as a plan's ranks run.
void onEachRank(MpiCommunicator &comm, const std::function<void(int)> &body) {
  std::vector<std::thread> threads;
  for (int i = 0; i < kPerProcess; ++i)
    threads.emplace_back(body, comm.rank() * kPerProcess + i);
  for (std::thread &t : threads)
    t.join();
}

/// Rank r's values: magnitudes far apart, so a sum in another order rounds
/// differently.
std::vector<float> valuesOf(int r, int n) {
  std::vector<float> v(n);
  for (int i = 0; i < n; ++i)
    v[i] = (r % 3 == 0 ? 1e8f : r % 3 == 1 ? 3.25f : -1e8f) + 0.1f * float(r) +
           0.01f * float(i * (r + 1));
  return v;
}

/// What the in-process transport computes: the sum in `group` order.
std::vector<float> groupSum(const std::vector<int> &group, int n,
                            int offset = 0) {
  std::vector<std::vector<float>> ins;
  std::vector<const void *> ptrs;
  for (int r : group)
    ins.push_back(valuesOf(r, offset + n));
  for (auto &v : ins)
    ptrs.push_back(v.data());
  std::vector<float> out(offset + n);
  sumInGroupOrder(DType::F32, out.data(), ptrs, offset, n);
  return std::vector<float>(out.begin(), out.begin() + n);
}

bool in(const std::vector<int> &group, int r) {
  return std::find(group.begin(), group.end(), r) != group.end();
}

TEST(MpiSharedRanks, AllReduceInAndAcrossProcessesGivesTheInProcessBits) {
  auto comm = shared();
  ASSERT_EQ(comm->size(), 6);
  ASSERT_EQ(comm->ranksPerProcess(), 2);
  const std::vector<std::vector<int>> groups = {
      {0, 1, 2, 3, 4, 5}, {5, 0, 3, 2}, {2, 3}, {1, 4}, {4, 1, 5}};
  for (int n : {1, 2, 7, 1000})
    for (const std::vector<int> &group : groups)
      onEachRank(*comm, [&](int r) {
        if (!in(group, r))
          return;
        std::vector<float> data = valuesOf(r, n);
        Status st = comm->allReduce(r, group, DType::F32, data.data(), n);
        EXPECT_TRUE(st) << st.message();
        std::vector<float> expected = groupSum(group, n);
        EXPECT_EQ(0, std::memcmp(data.data(), expected.data(), n * 4))
            << "rank " << r << " over [" << rankList(group) << "], n " << n;
      });
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST(MpiSharedRanks, AllGatherReduceScatterAndBroadcastInGroupOrder) {
  auto comm = shared();
  const std::vector<int> group = {3, 0, 5, 1};
  const int n = 3, g = static_cast<int>(group.size());
  onEachRank(*comm, [&](int r) {
    if (!in(group, r))
      return;
    std::vector<float> mine = valuesOf(r, n), all(g * n);
    EXPECT_TRUE(
        comm->allGather(r, group, DType::F32, mine.data(), n, all.data()));
    for (int i = 0; i < g; ++i)
      EXPECT_EQ(0, std::memcmp(all.data() + i * n,
                               valuesOf(group[i], n).data(), n * 4));
    // Part i of every member, summed in group order, to member i.
    std::vector<float> parts = valuesOf(r, g * n), out(n);
    EXPECT_TRUE(comm->reduceScatter(r, group, DType::F32, parts.data(), n,
                                    out.data()));
    const int at = static_cast<int>(
        std::find(group.begin(), group.end(), r) - group.begin());
    std::vector<float> expected = groupSum(group, n, at * n);
    EXPECT_EQ(0, std::memcmp(out.data(), expected.data(), n * 4))
        << "rank " << r;
    // Chunk `at` of every member, side by side in group order.
    std::vector<float> swapped(g * n);
    EXPECT_TRUE(comm->allToAll(r, group, DType::F32, parts.data(), n,
                               swapped.data()));
    for (int k = 0; k < g; ++k)
      EXPECT_EQ(0, std::memcmp(swapped.data() + k * n,
                               valuesOf(group[k], g * n).data() + at * n,
                               n * 4))
          << "rank " << r << " from position " << k;
    std::vector<float> b = r == 5 ? valuesOf(5, n) : std::vector<float>(n, 0);
    EXPECT_TRUE(comm->broadcast(r, group, 5, DType::F32, b.data(), n));
    EXPECT_EQ(0, std::memcmp(b.data(), valuesOf(5, n).data(), n * 4));
  });
  CommCounters c = comm->counters(comm->rank() * kPerProcess);
  if (in(group, comm->rank() * kPerProcess)) {
    EXPECT_EQ(c.allGatherBytes, n * 4);
    EXPECT_EQ(c.allToAllBytes, (g - 1) * n * 4);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

// Two groups whose members sit in every process, run at once by the two
// threads of each process, many rounds: their exchanges never meet.
TEST(MpiSharedRanks, GroupsExchangeAtOnceWithoutMeeting) {
  auto comm = shared();
  const std::vector<int> even = {0, 2, 4}, odd = {5, 3, 1};
  const int n = 257;
  onEachRank(*comm, [&](int r) {
    const std::vector<int> &group = r % 2 == 0 ? even : odd;
    for (int round = 0; round < 20; ++round) {
      std::vector<float> data = valuesOf(r + round, n);
      EXPECT_TRUE(comm->allReduce(r, group, DType::F32, data.data(), n));
      std::vector<std::vector<float>> ins;
      std::vector<const void *> ptrs;
      for (int q : group)
        ins.push_back(valuesOf(q + round, n));
      for (auto &v : ins)
        ptrs.push_back(v.data());
      std::vector<float> expected(n);
      sumInGroupOrder(DType::F32, expected.data(), ptrs, 0, n);
      EXPECT_EQ(0, std::memcmp(data.data(), expected.data(), n * 4))
          << "rank " << r << " round " << round;
    }
  });
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST(MpiSharedRanks, MessagesMatchBySenderReceiverAndTag) {
  auto comm = shared();
  onEachRank(*comm, [&](int r) {
    // Every rank sends to the next and to the one three on (another
    // process, or the same), two tags, the later one first.
    for (int to : {(r + 1) % 6, (r + 3) % 6}) {
      float a[2] = {float(r), float(to)}, b = float(100 + r);
      EXPECT_TRUE(comm->send(r, to, 8, DType::F32, a, 2));
      EXPECT_TRUE(comm->send(r, to, 3, DType::F32, &b, 1));
    }
    for (int from : {(r + 5) % 6, (r + 3) % 6}) {
      float a[2] = {}, b = 0;
      EXPECT_TRUE(comm->recv(r, from, 3, DType::F32, &b, 1));
      EXPECT_TRUE(comm->recv(r, from, 8, DType::F32, a, 2));
      EXPECT_EQ(b, float(100 + from));
      EXPECT_EQ(a[0], float(from));
      EXPECT_EQ(a[1], float(r));
    }
  });
  const int first = comm->rank() * kPerProcess;
  EXPECT_EQ(comm->counters(first).sendBytes, 2 * (8 + 4));
  EXPECT_EQ(comm->counters(first).recvBytes, 2 * (8 + 4));
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST(MpiSharedRanks, WaitsEndInErrorsThatSayWhy) {
  auto comm = shared(300ms);
  const int first = comm->rank() * kPerProcess;
  if (first == 4) {
    float x = 0;
    Status st = comm->recv(4, 0, 99, DType::F32, &x, 1);
    EXPECT_NE(st.message().find("recv on rank 4 from rank 0 (tag 99) timed "
                                "out after 0.3 s: process 0 never sent"),
              std::string::npos)
        << st.message();
  }
  // A rank of another process is not this one's to call for.
  float v = 0;
  EXPECT_NE(comm->allReduce((first + 2) % 6, {0, 2, 4}, DType::F32, &v, 1)
                .message()
                .find("is not one of process"),
            std::string::npos);
  comm->abort("rank 3 failed");
  EXPECT_NE(comm->send(first, (first + 2) % 6, 1, DType::F32, &v, 1)
                .message()
                .find("rank 3 failed"),
            std::string::npos);
  MPI_Barrier(MPI_COMM_WORLD);
}

} // namespace
