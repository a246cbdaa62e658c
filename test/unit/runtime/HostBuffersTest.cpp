//===- HostBuffersTest.cpp - host staging memory reused -------------------===//

#include "runtime/core/HostBuffers.h"

#include <gtest/gtest.h>

#include <cstring>
#include <thread>
#include <vector>

namespace whale::rt {
namespace {

constexpr size_t kMiB = size_t(1) << 20;

TEST(HostBuffers, ABlockGivenBackServesTheNextRequestOfItsSize) {
  HostBuffers pool;
  char *first = nullptr;
  {
    HostBuffers::Block b = pool.take(3 * kMiB);
    first = b.data();
    ASSERT_NE(first, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(first) % 64, 0u);
    EXPECT_EQ(b.bytesAsked(), 3 * kMiB);
    std::memset(first, 1, 3 * kMiB); // every byte is the caller's
    EXPECT_EQ(pool.kept(), 0u);
  }
  EXPECT_EQ(pool.kept(), 3 * kMiB);
  // Of the same size, or a little smaller: the same memory again.
  HostBuffers::Block again = pool.take(3 * kMiB - 100);
  EXPECT_EQ(again.data(), first);
  EXPECT_EQ(pool.kept(), 0u);
}

TEST(HostBuffers, ASmallRequestLeavesALargeBlockOnTheShelf) {
  HostBuffers pool;
  char *large = nullptr;
  {
    HostBuffers::Block b = pool.take(8 * kMiB);
    large = b.data();
  }
  {
    HostBuffers::Block small = pool.take(1024);
    EXPECT_NE(small.data(), large);
    EXPECT_EQ(pool.kept(), 8 * kMiB);
  }
  HostBuffers::Block b = pool.take(8 * kMiB);
  EXPECT_EQ(b.data(), large);
}

TEST(HostBuffers, KeepsNoMoreThanItsLimit) {
  HostBuffers pool(kMiB);
  { HostBuffers::Block a = pool.take(768 * 1024), b = pool.take(768 * 1024); }
  // The first given back fits the limit; the second goes to the system.
  EXPECT_EQ(pool.kept(), 768u * 1024);
}

TEST(HostBuffers, AMovedBlockIsGivenBackOnce) {
  HostBuffers pool;
  {
    HostBuffers::Block a = pool.take(kMiB);
    HostBuffers::Block b = std::move(a);
    HostBuffers::Block c = pool.take(2 * kMiB);
    c = std::move(b); // c's own block goes back first
    EXPECT_EQ(pool.kept(), 2 * kMiB);
  }
  EXPECT_EQ(pool.kept(), 3 * kMiB);
}

TEST(HostBuffers, ABlockMayOutliveItsPool) {
  HostBuffers::Block b;
  {
    HostBuffers pool;
    b = pool.take(kMiB);
  }
  std::memset(b.data(), 0, kMiB); // still the block's, freed when it goes
}

TEST(HostBuffers, ThreadsTakeAndGiveBackAtOnce) {
  HostBuffers pool(kMiB);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&pool, t] {
      for (int i = 0; i < 500; ++i) {
        HostBuffers::Block b = pool.take((t + 1) * 64 * 1024);
        std::memset(b.data(), t, b.bytesAsked());
      }
    });
  for (std::thread &t : threads)
    t.join();
  // Blocks came back, and no more than the limit stayed.
  EXPECT_GT(pool.kept(), 0u);
  EXPECT_LE(pool.kept(), kMiB);
}

} // namespace
} // namespace whale::rt
