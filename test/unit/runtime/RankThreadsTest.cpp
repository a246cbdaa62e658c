//===- RankThreadsTest.cpp - rank threads kept from step to step ----------===//

#include "runtime/run/RankThreads.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace whale {
namespace {

TEST(RankThreads, EachRankKeepsItsThreadFromRoundToRound) {
  RankThreads threads;
  std::vector<std::thread::id> first(3), again(3);
  auto record = [](std::vector<std::thread::id> &into) {
    return std::function<void(size_t)>(
        [&into](size_t i) { into[i] = std::this_thread::get_id(); });
  };
  ASSERT_EQ(threads.run(3, record(first)), "");
  for (int round = 0; round < 20; ++round)
    ASSERT_EQ(threads.run(3, record(again)), "");
  EXPECT_EQ(first, again);
  // Not the caller's thread, and one thread per rank.
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_NE(first[i], std::this_thread::get_id());
    for (size_t j = 0; j < i; ++j)
      EXPECT_NE(first[i], first[j]);
  }
}

TEST(RankThreads, RanksRunAtOnceAndTheCallWaitsForAll) {
  // Every rank waits for the others inside its work, as ranks meet in a
  // collective: only threads running at once get past it.
  RankThreads threads;
  for (size_t n : {4u, 2u, 5u}) {
    std::atomic<size_t> arrived{0};
    std::atomic<int> done{0};
    std::function<void(size_t)> work = [&](size_t) {
      ++arrived;
      while (arrived.load() < n)
        std::this_thread::yield();
      ++done;
    };
    ASSERT_EQ(threads.run(n, work), "");
    EXPECT_EQ(done.load(), static_cast<int>(n)) << n << " ranks";
  }
}

} // namespace
} // namespace whale
