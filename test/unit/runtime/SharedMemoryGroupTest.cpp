//===- SharedMemoryGroupTest.cpp - collectives through shared memory -----===//
//
// The members are threads here, each with its own mapping of the segment,
// as processes would have: the rounds, the group-order sums and the waits
// that give up are the same.

#include "runtime/comm/SharedMemoryGroup.h"
#include "runtime/comm/Communicator.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <functional>
#include <thread>

#include <unistd.h>

using namespace whale::rt;

namespace {

std::string segmentName(const char *test) {
  return "/whale-test-" + std::to_string(getpid()) + "-" + test;
}

/// Every member's mapping, made before any thread starts; the name is gone
/// once all are mapped.
std::vector<std::unique_ptr<SharedMemoryGroup>> mapped(const std::string &name,
                                                       int n) {
  std::vector<std::unique_ptr<SharedMemoryGroup>> out;
  for (int p = 0; p < n; ++p) {
    std::string error;
    out.push_back(SharedMemoryGroup::open(
        name, n, p, SharedMemoryGroup::kBufferBytes, error));
    EXPECT_TRUE(out.back()) << error;
  }
  out[0]->unlink();
  return out;
}

/// Spins until `ready()`, giving up after `limit`.
SharedMemoryGroup::Wait spinFor(std::chrono::milliseconds limit) {
  return [limit](const std::function<bool()> &ready) {
    auto until = std::chrono::steady_clock::now() + limit;
    while (!ready()) {
      if (std::chrono::steady_clock::now() > until)
        return Status::internal("timed out");
      std::this_thread::yield();
    }
    return Status::ok();
  };
}

void onMembers(int n, const std::function<void(int)> &body) {
  std::vector<std::thread> threads;
  for (int p = 0; p < n; ++p)
    threads.emplace_back(body, p);
  for (std::thread &t : threads)
    t.join();
}

TEST(SharedMemoryGroup, GathersPartsOfUnequalSizeOverManyRounds) {
  const int n = 3;
  auto group = mapped(segmentName("gather"), n);
  // Member 1's part takes three rounds, member 2's none.
  const int64_t big = 2 * SharedMemoryGroup::kBufferBytes + 12345;
  const std::vector<int64_t> bytes = {100, big, 0}, at = {0, 100, 100 + big};
  std::vector<std::vector<char>> out(n, std::vector<char>(100 + big, 0));
  onMembers(n, [&](int p) {
    std::vector<char> mine(bytes[p]);
    for (int64_t i = 0; i < bytes[p]; ++i)
      mine[i] = char((i * 7 + p) % 127);
    // Twice: the second collective's rounds follow the first's.
    for (int rep = 0; rep < 2; ++rep)
      EXPECT_TRUE(group[p]->gather(mine.data(), out[p].data(), bytes, at,
                                   spinFor(std::chrono::seconds(20))));
  });
  for (int p = 0; p < n; ++p)
    for (int k = 0; k < n; ++k)
      for (int64_t i = 0; i < bytes[k]; ++i)
        ASSERT_EQ(out[p][at[k] + i], char((i * 7 + k) % 127))
            << "member " << p << ", part " << k << ", byte " << i;
}

/// Magnitudes that make the order of the additions show in the bits.
float valueOf(int member, int64_t i) {
  return float(std::pow(10.0, (member * 3 + i) % 9 - 4)) * (i % 2 ? -1.f : 1.f);
}

/// Member 0's value plus member 1's and so on, in that order.
float sumInOrder(int members, int64_t i) {
  float sum = valueOf(0, i);
  for (int q = 1; q < members; ++q)
    sum += valueOf(q, i);
  return sum;
}

/// Chunks of different lengths, one longer than a round's slot, one empty.
struct Chunks {
  std::vector<int64_t> len = {3, 0, SharedMemoryGroup::kBufferBytes / 4, 17},
                       at;
  int64_t total = 0;
  Chunks() {
    for (int64_t l : len) {
      at.push_back(total);
      total += l;
    }
  }
};

/// Every member's values over the chunks `c`.
std::vector<std::vector<float>> valuesOver(const Chunks &c, int n) {
  std::vector<std::vector<float>> data(n, std::vector<float>(c.total));
  for (int p = 0; p < n; ++p)
    for (int64_t i = 0; i < c.total; ++i)
      data[p][i] = valueOf(p, i);
  return data;
}

TEST(SharedMemoryGroup, SumsEachChunkInGroupOrderOnItsMember) {
  const int n = 4;
  auto group = mapped(segmentName("reduce"), n);
  Chunks c;
  std::vector<std::vector<float>> data = valuesOver(c, n);
  onMembers(n, [&](int p) {
    // The sum written over the member's own chunk, in place.
    EXPECT_TRUE(group[p]->reduce(DType::F32, data[p].data(), c.len, c.at,
                                 data[p].data() + c.at[p],
                                 spinFor(std::chrono::seconds(20))));
  });
  for (int k = 0; k < n; ++k)
    for (int64_t i = c.at[k]; i < c.at[k] + c.len[k]; ++i)
      ASSERT_EQ(data[k][i], sumInOrder(n, i))
          << "chunk " << k << ", element " << i;
}

TEST(SharedMemoryGroup, AllReducesWithEachChunkSummedOnItsMember) {
  const int n = 4;
  auto group = mapped(segmentName("all-reduce"), n);
  Chunks c;
  std::vector<std::vector<float>> data = valuesOver(c, n);
  onMembers(n, [&](int p) {
    EXPECT_TRUE(group[p]->allReduce(DType::F32, data[p].data(), c.len, c.at,
                                    spinFor(std::chrono::seconds(20))));
  });
  for (int p = 0; p < n; ++p)
    for (int64_t i = 0; i < c.total; ++i)
      ASSERT_EQ(data[p][i], sumInOrder(n, i))
          << "member " << p << ", element " << i;
}

TEST(SharedMemoryGroup, AWaitThatGivesUpBreaksTheGroupAndLeavesTheCallerAlone) {
  const int n = 2;
  auto group = mapped(segmentName("late"), n);
  const std::vector<int64_t> bytes = {8, 8}, at = {0, 8};
  std::vector<char> out0(16, 0), mine0(8, 'a'), mine1(8, 'b');
  // Member 1 never comes: member 0 gives up.
  Status st = group[0]->gather(mine0.data(), out0.data(), bytes, at,
                               spinFor(std::chrono::milliseconds(50)));
  EXPECT_EQ(st.message(), "timed out");
  EXPECT_TRUE(group[0]->broken());
  std::fill(out0.begin(), out0.end(), 'x'); // the caller's memory again
  // Late, member 1 completes with what member 0 posted, in its own
  // memory; member 0's stays as its caller left it.
  std::vector<char> out1(16, 0);
  EXPECT_TRUE(group[1]->gather(mine1.data(), out1.data(), bytes, at,
                               spinFor(std::chrono::seconds(5))));
  EXPECT_EQ(std::string(out1.begin(), out1.end()), "aaaaaaaabbbbbbbb");
  EXPECT_EQ(std::string(out0.begin(), out0.end()), std::string(16, 'x'));
  // A broken group refuses what comes next.
  EXPECT_FALSE(group[0]->gather(mine0.data(), out0.data(), bytes, at,
                                spinFor(std::chrono::seconds(5))));
}

TEST(SharedMemoryGroup, AMissingSegmentIsAnErrorThatSaysWhere) {
  std::string error;
  const int64_t buffer = SharedMemoryGroup::kBufferBytes;
  EXPECT_FALSE(SharedMemoryGroup::open("/no/such/dir", 2, 0, buffer, error));
  EXPECT_NE(error.find("/no/such/dir"), std::string::npos) << error;
  EXPECT_FALSE(
      SharedMemoryGroup::open(segmentName("one"), 1, 0, buffer, error));
  EXPECT_FALSE(SharedMemoryGroup::open(segmentName("tiny"), 2, 0, 8, error));
}

} // namespace
