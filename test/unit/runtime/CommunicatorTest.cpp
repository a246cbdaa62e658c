//===- CommunicatorTest.cpp - the in-process communicator -----------------===//

#include "runtime/comm/Communicator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <thread>

using namespace whale::rt;
using namespace std::chrono_literals;

namespace {

/// Runs `body(rank)` on one thread per rank and waits for all.
void onRanks(int n, const std::function<void(int)> &body) {
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back(body, r);
  for (std::thread &t : threads)
    t.join();
}

TEST(Communicator, AllReduceSumsInPlaceOverASubgroup) {
  InProcessCommunicator comm(4, 5s);
  std::vector<std::vector<float>> data(4);
  onRanks(4, [&](int r) {
    data[r] = {float(r), float(10 * r)};
    // Ranks 0 and 2 form one group, 1 and 3 another, at the same time.
    std::vector<int> group = r % 2 == 0 ? std::vector<int>{0, 2}
                                        : std::vector<int>{1, 3};
    EXPECT_TRUE(comm.allReduce(r, group, DType::F32, data[r].data(), 2));
  });
  EXPECT_EQ(data[0], (std::vector<float>{2, 20}));
  EXPECT_EQ(data[2], (std::vector<float>{2, 20}));
  EXPECT_EQ(data[1], (std::vector<float>{4, 40}));
  EXPECT_EQ(data[3], (std::vector<float>{4, 40}));
  EXPECT_EQ(comm.counters(0).allReduceBytes, 8);
}

TEST(Communicator, AllReduceSlicesTheSumsAndKeepsTheGroupsOrder) {
  // 3 ranks, 1000 elements (not a multiple of 3), rounds of growing and
  // shrinking sizes (the buffer of one round serves the next): every rank
  // ends with each element summed in the group's order, bit for bit.
  InProcessCommunicator comm(3, 5s);
  const std::vector<int> group = {2, 0, 1};
  for (int64_t count : {1000, 7, 1000, 2, 4000}) {
    std::vector<std::vector<float>> data(3);
    auto value = [](int r, int64_t i) {
      return 1.0f / float(3 * i + r + 1) + (r == 1 ? 1e7f : 0.0f);
    };
    onRanks(3, [&](int r) {
      data[r].resize(count);
      for (int64_t i = 0; i < count; ++i)
        data[r][i] = value(r, i);
      EXPECT_TRUE(comm.allReduce(r, group, DType::F32, data[r].data(), count));
    });
    for (int64_t i = 0; i < count; ++i) {
      float expected = value(2, i);
      expected += value(0, i);
      expected += value(1, i);
      for (int r = 0; r < 3; ++r)
        ASSERT_EQ(data[r][i], expected) << "rank " << r << " element " << i;
    }
  }
}

TEST(Communicator, AllGatherReduceScatterAndBroadcastInGroupOrder) {
  InProcessCommunicator comm(3, 5s);
  std::vector<int> group = {2, 0, 1};
  std::vector<std::vector<int64_t>> gathered(3, std::vector<int64_t>(3));
  std::vector<double> scattered(3);
  std::vector<int32_t> broadcast(3);
  onRanks(3, [&](int r) {
    int64_t mine = 100 + r;
    EXPECT_TRUE(comm.allGather(r, group, DType::I64, &mine, 1,
                               gathered[r].data()));
    // Rank r contributes r+1 to every part; the caller at position i of
    // the group gets part i.
    std::vector<double> parts(3, r + 1.0);
    EXPECT_TRUE(comm.reduceScatter(r, group, DType::F64, parts.data(), 1,
                                   &scattered[r]));
    broadcast[r] = r == 1 ? 77 : -1;
    EXPECT_TRUE(comm.broadcast(r, group, 1, DType::I32, &broadcast[r], 1));
  });
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(gathered[r], (std::vector<int64_t>{102, 100, 101}));
    EXPECT_EQ(scattered[r], 6.0);
    EXPECT_EQ(broadcast[r], 77);
  }
}

// ZeRO's gradients: each member's part summed on that member alone, with
// the all-reduce's bits; parts of any size, none included.
TEST(Communicator, ReduceToOwnersSumsEachPartOnItsOwnerAlone) {
  InProcessCommunicator comm(3, 5s);
  const std::vector<int> group = {2, 0, 1};
  const std::vector<int64_t> parts = {3, 0, 2}; // rank 2: 3, rank 0: none
  std::vector<std::vector<float>> data(3), summed(3);
  auto valuesOf = [](int r) {
    std::vector<float> v(5);
    for (int i = 0; i < 5; ++i)
      v[i] = (r == 0 ? 1e8f : r == 1 ? 3.25f : -1e8f) + 0.1f * float(i);
    return v;
  };
  onRanks(3, [&](int r) {
    data[r] = summed[r] = valuesOf(r);
    EXPECT_TRUE(
        comm.reduceToOwners(r, group, DType::F32, data[r].data(), parts));
    EXPECT_TRUE(comm.allReduce(r, group, DType::F32, summed[r].data(), 5));
  });
  // Rank 2 owns elements 0-2, rank 1 elements 3-4; the rest are the
  // members' own values.
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(data[2][i], summed[2][i]) << i;
  for (int i = 3; i < 5; ++i) {
    EXPECT_EQ(data[1][i], summed[1][i]) << i;
    EXPECT_EQ(data[2][i], valuesOf(2)[i]) << i;
  }
  EXPECT_EQ(data[0], valuesOf(0));
  // What left each rank: the parts it does not own.
  EXPECT_EQ(comm.counters(2).reduceToOwnersBytes, 2 * 4);
  EXPECT_EQ(comm.counters(0).reduceToOwnersBytes, 5 * 4);
  EXPECT_EQ(comm.counters(1).reduceToOwnersBytes, 3 * 4);

  // Parts that do not fit the group are refused before anyone waits.
  Status st = comm.reduceToOwners(0, group, DType::F32, data[0].data(), {1, 2});
  EXPECT_FALSE(st);
  EXPECT_NE(st.message().find("2 parts for a group of 3 ranks"),
            std::string::npos)
      << st.message();
}

// ZeRO's updated parameters: each member's part copied from it to every
// other, in place.
TEST(Communicator, GatherFromOwnersHandsEachPartFromItsOwner) {
  InProcessCommunicator comm(3, 5s);
  const std::vector<int> group = {1, 2, 0};
  const std::vector<int64_t> parts = {2, 0, 3}; // rank 1: 2, rank 0: 3
  std::vector<std::vector<int32_t>> data(3);
  onRanks(3, [&](int r) {
    data[r].assign(5, -1 - r); // what no owner's part may keep
    const int64_t from = r == 1 ? 0 : 2, count = r == 1 ? 2 : r == 0 ? 3 : 0;
    for (int64_t i = from; i < from + count; ++i)
      data[r][i] = 10 * r + int32_t(i);
    EXPECT_TRUE(
        comm.gatherFromOwners(r, group, DType::I32, data[r].data(), parts));
  });
  for (int r = 0; r < 3; ++r)
    EXPECT_EQ(data[r], (std::vector<int32_t>{10, 11, 2, 3, 4})) << r;
  // An owner's part leaves once for each other member.
  EXPECT_EQ(comm.counters(1).broadcastBytes, 2 * 2 * 4);
  EXPECT_EQ(comm.counters(0).broadcastBytes, 2 * 3 * 4);
  EXPECT_EQ(comm.counters(2).broadcastBytes, 0);
}

TEST(Communicator, AllToAllHandsEachMemberItsChunksInGroupOrder) {
  InProcessCommunicator comm(3, 5s);
  std::vector<int> group = {2, 0, 1};
  std::vector<std::vector<int32_t>> got(3, std::vector<int32_t>(6));
  onRanks(3, [&](int r) {
    // Rank r's chunk for position i is {100 r + 10 i, 100 r + 10 i + 1}.
    std::vector<int32_t> send(6);
    for (int i = 0; i < 3; ++i)
      for (int e = 0; e < 2; ++e)
        send[2 * i + e] = 100 * r + 10 * i + e;
    EXPECT_TRUE(comm.allToAll(r, group, DType::I32, send.data(), 2,
                              got[r].data()));
  });
  for (int r = 0; r < 3; ++r) {
    const int pos = static_cast<int>(
        std::find(group.begin(), group.end(), r) - group.begin());
    for (int k = 0; k < 3; ++k)
      for (int e = 0; e < 2; ++e)
        EXPECT_EQ(got[r][2 * k + e], 100 * group[k] + 10 * pos + e)
            << "rank " << r << " from position " << k;
    // Two of its three chunks left it.
    EXPECT_EQ(comm.counters(r).allToAllBytes, 2 * 2 * 4);
  }
}

TEST(Communicator, SendIsBufferedAndRecvMatchesByTag) {
  InProcessCommunicator comm(2, 5s);
  float a[2] = {1, 2}, b[2] = {3, 4};
  // Both sends return before any recv; the receiver takes tag 7 first.
  ASSERT_TRUE(comm.send(0, 1, 5, DType::F32, a, 2));
  ASSERT_TRUE(comm.send(0, 1, 7, DType::F32, b, 2));
  float got[2];
  ASSERT_TRUE(comm.recv(1, 0, 7, DType::F32, got, 2));
  EXPECT_EQ(got[0], 3);
  ASSERT_TRUE(comm.recv(1, 0, 5, DType::F32, got, 2));
  EXPECT_EQ(got[1], 2);
  EXPECT_EQ(comm.counters(0).sendBytes, 16);
  EXPECT_EQ(comm.counters(1).recvBytes, 16);
  Status wrong = comm.send(0, 1, 9, DType::F32, a, 2);
  ASSERT_TRUE(wrong);
  Status size = comm.recv(1, 0, 9, DType::F32, got, 1);
  EXPECT_FALSE(size);
  EXPECT_NE(size.message().find("the message has 8 bytes, the receiver "
                                "expects 4"),
            std::string::npos);
}

TEST(Communicator, ATimeoutNamesTheOpAndTheRanksThatNeverCame) {
  InProcessCommunicator comm(3, 50ms);
  float x = 1;
  Status st = comm.allReduce(0, {0, 1, 2}, DType::F32, &x, 1);
  ASSERT_FALSE(st);
  EXPECT_NE(st.message().find("all_reduce over ranks [0, 1, 2] (rank 0) "
                              "timed out"),
            std::string::npos)
      << st.message();
  EXPECT_NE(st.message().find("rank(s) 1, 2 never came"), std::string::npos)
      << st.message();
  // The communicator is aborted: later waits end at once with the reason.
  Status after = comm.recv(1, 0, 0, DType::F32, &x, 1);
  EXPECT_FALSE(after);
  EXPECT_NE(after.message().find("timed out"), std::string::npos);
}

TEST(Communicator, ARecvNobodySendsToTimesOut) {
  InProcessCommunicator comm(2, 50ms);
  float x;
  Status st = comm.recv(1, 0, 3, DType::F32, &x, 1);
  ASSERT_FALSE(st);
  EXPECT_NE(st.message().find("recv on rank 1 from rank 0 (tag 3) timed out "
                              "after 0.05 s: rank 0 never sent"),
            std::string::npos)
      << st.message();
}

TEST(Communicator, MismatchedCollectivesAndBadGroupsAreErrors) {
  InProcessCommunicator comm(2, 5s);
  float x = 1;
  std::vector<Status> results(2);
  onRanks(2, [&](int r) {
    results[r] = r == 0 ? comm.allReduce(0, {0, 1}, DType::F32, &x, 1)
                        : comm.broadcast(1, {0, 1}, 0, DType::F32, &x, 1);
  });
  EXPECT_FALSE(results[0] && results[1]);
  InProcessCommunicator fresh(2, 5s);
  EXPECT_FALSE(fresh.allReduce(0, {1}, DType::F32, &x, 1)); // not in group
  EXPECT_FALSE(fresh.allReduce(0, {0, 0}, DType::F32, &x, 1));
  EXPECT_FALSE(fresh.allReduce(0, {0, 5}, DType::F32, &x, 1));
  EXPECT_FALSE(fresh.send(0, 0, 1, DType::F32, &x, 1));
}

TEST(Communicator, AbortEndsEveryWait) {
  InProcessCommunicator comm(2, 10s);
  float x = 0;
  Status waited;
  std::thread t([&] { waited = comm.recv(1, 0, 1, DType::F32, &x, 1); });
  std::this_thread::sleep_for(20ms);
  comm.abort("rank 0 failed");
  t.join();
  ASSERT_FALSE(waited);
  EXPECT_NE(waited.message().find("rank 0 failed"), std::string::npos);
}

} // namespace
