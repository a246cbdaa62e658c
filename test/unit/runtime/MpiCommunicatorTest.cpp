//===- MpiCommunicatorTest.cpp - ranks as processes
//-------------------------===//
//
// Run as three processes (`mpirun -np 3 whale-mpi-tests`): every collective
// over the world and over subgroups gives the bits the in-process transport
// gives (sums in group order), messages match by tag whatever their order,
// and waits end in errors, never hangs.
//
//===----------------------------------------------------------------------===//

#include "runtime/comm/MpiCommunicator.h"

#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <cstring>

using namespace whale::rt;
using namespace std::chrono_literals;

namespace {

std::unique_ptr<MpiCommunicator> world(std::chrono::milliseconds timeout = 5s) {
  std::string error;
  std::unique_ptr<MpiCommunicator> comm =
      MpiCommunicator::create(timeout, error);
  EXPECT_TRUE(comm) << error;
  return comm;
}

/// Rank r's values: magnitudes far apart, so a sum in another order rounds
/// differently.
std::vector<float> valuesOf(int r, int n) {
  std::vector<float> v(n);
  for (int i = 0; i < n; ++i)
    v[i] = (r == 0 ? 1e8f : r == 1 ? 3.25f : -1e8f) + 0.1f * float(i * (r + 1));
  return v;
}

/// What the in-process transport computes: the sum in `group` order.
std::vector<float> groupSum(const std::vector<int> &group, int n) {
  std::vector<std::vector<float>> ins;
  std::vector<const void *> ptrs;
  for (int r : group)
    ins.push_back(valuesOf(r, n));
  for (auto &v : ins)
    ptrs.push_back(v.data());
  std::vector<float> out(n);
  sumInGroupOrder(DType::F32, out.data(), ptrs, 0, n);
  return out;
}

TEST(Mpi, AllReduceOverTheWorldAndASubgroupGivesTheInProcessBits) {
  auto comm = world();
  ASSERT_EQ(comm->size(), 3);
  const int me = comm->rank(), n = 5;
  std::vector<float> data = valuesOf(me, n);
  ASSERT_TRUE(comm->allReduce(me, {0, 1, 2}, DType::F32, data.data(), n));
  std::vector<float> expected = groupSum({0, 1, 2}, n);
  EXPECT_EQ(std::memcmp(data.data(), expected.data(), n * 4), 0);
  // Ranks 2 and 0, in that order; rank 1 takes no part.
  if (me != 1) {
    data = valuesOf(me, n);
    ASSERT_TRUE(comm->allReduce(me, {2, 0}, DType::F32, data.data(), n));
    expected = groupSum({2, 0}, n);
    EXPECT_EQ(std::memcmp(data.data(), expected.data(), n * 4), 0);
  }
  // Fewer elements than members: some members sum no chunk.
  data = valuesOf(me, 2);
  ASSERT_TRUE(comm->allReduce(me, {0, 1, 2}, DType::F32, data.data(), 2));
  expected = groupSum({0, 1, 2}, 2);
  EXPECT_EQ(std::memcmp(data.data(), expected.data(), 2 * 4), 0);
  EXPECT_EQ(comm->counters(me).allReduceBytes, me == 1 ? 28 : 48);
}

TEST(Mpi, ReduceToOwnersGivesEachOwnerTheAllReduceBits) {
  auto comm = world();
  const int me = comm->rank(), n = 6;
  const std::vector<int> group = {1, 2, 0};
  const std::vector<int64_t> parts = {1, 5, 0}; // rank 1: 1, rank 2: 5
  std::vector<float> data = valuesOf(me, n);
  ASSERT_TRUE(comm->reduceToOwners(me, group, DType::F32, data.data(), parts));
  const std::vector<float> expected = groupSum(group, n), mine = valuesOf(me, n);
  for (int i = 0; i < n; ++i) {
    const bool owned = (me == 1 && i < 1) || (me == 2 && i >= 1);
    EXPECT_EQ(data[i], owned ? expected[i] : mine[i]) << "element " << i;
  }
  EXPECT_EQ(comm->counters(me).reduceToOwnersBytes,
            4 * (me == 1 ? 5 : me == 2 ? 1 : 6));
}

TEST(Mpi, GatherFromOwnersHandsEachPartFromItsOwner) {
  auto comm = world();
  const int me = comm->rank();
  const std::vector<int> group = {2, 0, 1};
  const std::vector<int64_t> parts = {1, 0, 3}; // rank 2: 1, rank 1: 3
  std::vector<float> data(4, -1.0f);
  if (me == 2)
    data[0] = 20;
  if (me == 1)
    data[1] = 11, data[2] = 12, data[3] = 13;
  ASSERT_TRUE(
      comm->gatherFromOwners(me, group, DType::F32, data.data(), parts));
  EXPECT_EQ(data, (std::vector<float>{20, 11, 12, 13}));
  EXPECT_EQ(comm->counters(me).broadcastBytes,
            me == 2 ? 2 * 4 : me == 1 ? 2 * 3 * 4 : 0);
}

TEST(Mpi, AllGatherReduceScatterAndBroadcastInGroupOrder) {
  auto comm = world();
  const int me = comm->rank();
  const std::vector<int> group = {1, 2, 0};
  const int pos = me == 1 ? 0 : me == 2 ? 1 : 2;
  int32_t mine[2] = {10 * me, 10 * me + 1}, all[6] = {};
  ASSERT_TRUE(comm->allGather(me, group, DType::I32, mine, 2, all));
  EXPECT_EQ(std::vector<int32_t>(all, all + 6),
            (std::vector<int32_t>{10, 11, 20, 21, 0, 1}));

  // Each rank holds three parts of two; position i gets the sum of every
  // rank's part i, in group order.
  std::vector<float> in(6), out(2);
  for (int k = 0; k < 6; ++k)
    in[k] = valuesOf(me, 6)[k];
  ASSERT_TRUE(
      comm->reduceScatter(me, group, DType::F32, in.data(), 2, out.data()));
  std::vector<float> whole = groupSum(group, 6);
  EXPECT_EQ(out[0], whole[2 * pos]);
  EXPECT_EQ(out[1], whole[2 * pos + 1]);

  // All-to-all: position k of the result is what group[k] sent this
  // position (its chunk pos).
  std::vector<float> swapped(6);
  ASSERT_TRUE(
      comm->allToAll(me, group, DType::F32, in.data(), 2, swapped.data()));
  for (int k = 0; k < 3; ++k)
    for (int e = 0; e < 2; ++e)
      EXPECT_EQ(swapped[2 * k + e], valuesOf(group[k], 6)[2 * pos + e]);
  EXPECT_EQ(comm->counters(me).allToAllBytes, 2 * 2 * 4);

  double value = me == 2 ? 2.5 : 0.0;
  ASSERT_TRUE(comm->broadcast(me, group, 2, DType::F64, &value, 1));
  EXPECT_EQ(value, 2.5);
}

/// Every collective the shared memory carries, on `comm`, with counts that
/// take several rounds and chunks of unequal length; the results, one after
/// another.
std::vector<float> largeCollectives(MpiCommunicator &comm) {
  const int me = comm.rank();
  const std::vector<int> group = {2, 0, 1};
  const int64_t n = 3 * (int64_t(1) << 20) + 7; // 12 MiB and a bit
  std::vector<float> results;
  auto append = [&](const std::vector<float> &v) {
    results.insert(results.end(), v.begin(), v.end());
  };
  std::vector<float> data(n);
  auto fill = [&] {
    for (int64_t i = 0; i < n; ++i)
      data[i] = valuesOf(me, 1)[0] * float(1 + i % 13) + 0.37f * float(i % 101);
  };
  fill();
  EXPECT_TRUE(comm.allReduce(me, group, DType::F32, data.data(), n));
  append(data);
  fill();
  const std::vector<int64_t> parts = {n - 1000, 0, 1000};
  EXPECT_TRUE(comm.reduceToOwners(me, group, DType::F32, data.data(), parts));
  append(data);
  EXPECT_TRUE(comm.gatherFromOwners(me, group, DType::F32, data.data(), parts));
  append(data);
  fill();
  std::vector<float> out(3 * n);
  EXPECT_TRUE(
      comm.allGather(me, group, DType::F32, data.data(), n, out.data()));
  append(out);
  std::vector<float> in(out.begin(), out.end()), part(n);
  for (int64_t i = 0; i < 3 * n; ++i)
    in[i] += float(me) * 0.5f;
  EXPECT_TRUE(
      comm.reduceScatter(me, group, DType::F32, in.data(), n, part.data()));
  append(part);
  return results;
}

TEST(Mpi, SharedMemoryGivesMpisBitsOverManyRounds) {
  auto shared = world();
  std::vector<float> through = largeCollectives(*shared);
  EXPECT_TRUE(shared->sharesMemory({2, 0, 1}));
  setenv("WHALE_MPI_SHARED_MEMORY", "0", 1);
  auto mpi = world();
  std::vector<float> without = largeCollectives(*mpi);
  unsetenv("WHALE_MPI_SHARED_MEMORY");
  EXPECT_FALSE(mpi->sharesMemory({2, 0, 1}));
  ASSERT_EQ(through.size(), without.size());
  // Bits, not values: the same sums in the same order.
  EXPECT_EQ(std::memcmp(through.data(), without.data(),
                        through.size() * sizeof(float)),
            0);
  EXPECT_EQ(shared->counters(shared->rank()).allReduceBytes,
            mpi->counters(mpi->rank()).allReduceBytes);
  EXPECT_EQ(shared->counters(shared->rank()).reduceScatterBytes,
            mpi->counters(mpi->rank()).reduceScatterBytes);
}

TEST(Mpi, MessagesMatchByTagWhateverTheirOrder) {
  auto comm = world();
  const int me = comm->rank();
  if (me == 0) {
    float a[3] = {1, 2, 3}, b[1] = {9};
    ASSERT_TRUE(comm->send(0, 1, 5, DType::F32, a, 3));
    ASSERT_TRUE(comm->send(0, 1, 3, DType::F32, b, 1));
    ASSERT_TRUE(comm->send(0, 2, 7, DType::F32, b, 0)); // empty
  } else if (me == 1) {
    float a[3] = {}, b[1] = {};
    ASSERT_TRUE(comm->recv(1, 0, 3, DType::F32, b, 1)); // the later send
    ASSERT_TRUE(comm->recv(1, 0, 5, DType::F32, a, 3));
    EXPECT_EQ(b[0], 9);
    EXPECT_EQ(a[2], 3);
  } else {
    ASSERT_TRUE(comm->recv(2, 0, 7, DType::F32, nullptr, 0));
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST(Mpi, WaitsEndInErrorsThatSayWhy) {
  auto comm = world(300ms);
  const int me = comm->rank();
  if (me == 2) {
    float x = 0;
    Status st = comm->recv(2, 0, 99, DType::F32, &x, 1);
    EXPECT_FALSE(st);
    EXPECT_NE(st.message().find("recv on rank 2 from rank 0 (tag 99) timed "
                                "out after 0.3 s: rank 0 never sent"),
              std::string::npos)
        << st.message();
    // A message of another size than the receiver expects.
  }
  if (me == 1) {
    float two[2] = {1, 2};
    ASSERT_TRUE(comm->send(1, 0, 4, DType::F32, two, 2));
  } else if (me == 0) {
    float one = 0;
    Status st = comm->recv(0, 1, 4, DType::F32, &one, 1);
    EXPECT_NE(st.message().find("the message has 8 bytes, the receiver "
                                "expects 4"),
              std::string::npos)
        << st.message();
  }
  // Bad groups and callers are refused before any MPI call.
  float v = 0;
  EXPECT_NE(comm->allReduce(me, {0, 0}, DType::F32, &v, 1)
                .message()
                .find("names a rank twice"),
            std::string::npos);
  EXPECT_NE(comm->allReduce((me + 1) % 3, {0, 1, 2}, DType::F32, &v, 1)
                .message()
                .find("this process is rank"),
            std::string::npos);
  comm->abort("rank 1 failed");
  EXPECT_NE(comm->send(me, (me + 1) % 3, 1, DType::F32, &v, 1)
                .message()
                .find("rank 1 failed"),
            std::string::npos);
  MPI_Barrier(MPI_COMM_WORLD);
}

/// A wait that gives up leaves its request with MPI (a non-blocking
/// collective can be neither cancelled nor freed): members that come later
/// still complete it, and their parts land in the buffers it was given.
/// Those must never be the caller's, which it frees or reuses once the call
/// has failed.
TEST(Mpi, AGivenUpCollectiveNeverWritesTheCallersMemoryAfterwards) {
  auto comm = world(300ms);
  const int me = comm->rank(), n = 4;
  std::vector<float> in(n, float(me + 1)), out(3 * n, 0);
  // Every member makes the group's communicator: the collective works.
  ASSERT_TRUE(
      comm->allGather(me, {0, 1, 2}, DType::F32, in.data(), n, out.data()));
  double value = me == 1 ? 4.5 : 0.0;
  ASSERT_TRUE(comm->broadcast(me, {0, 1, 2}, 1, DType::F64, &value, 1));
  MPI_Barrier(MPI_COMM_WORLD);
  if (me == 0) {
    // Alone: the others come only after its waits gave up.
    Status gathered =
        comm->allGather(0, {0, 1, 2}, DType::F32, in.data(), n, out.data());
    EXPECT_NE(gathered.message().find("timed out"), std::string::npos)
        << gathered.message();
    Status broadcast = comm->broadcast(0, {0, 1, 2}, 1, DType::F64, &value, 1);
    EXPECT_FALSE(broadcast);
    // The caller's memory is its own again.
    std::fill(out.begin(), out.end(), -7.0f);
    value = -7.0;
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (me != 0) {
    // Late, they complete with the requests rank 0 gave up on (it moves
    // them on in the barrier below).
    out.assign(out.size(), 0.0f);
    EXPECT_TRUE(
        comm->allGather(me, {0, 1, 2}, DType::F32, in.data(), n, out.data()));
    EXPECT_EQ(out[0], 1.0f);
    value = me == 1 ? 8.5 : 0.0;
    EXPECT_TRUE(comm->broadcast(me, {0, 1, 2}, 1, DType::F64, &value, 1));
    EXPECT_EQ(value, 8.5);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (me == 0) {
    EXPECT_EQ(out, std::vector<float>(3 * n, -7.0f));
    EXPECT_EQ(value, -7.0);
  }
}

} // namespace

int main(int argc, char **argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  testing::InitGoogleTest(&argc, argv);
  int rc = RUN_ALL_TESTS();
  MPI_Finalize();
  return rc;
}
