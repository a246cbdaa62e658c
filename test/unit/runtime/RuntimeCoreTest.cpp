//===- RuntimeCoreTest.cpp - allocator, threads, optimizers, profiler -----===//

#include "GradCheck.h"
#include "test/unit/TempPath.h"

#include "runtime/core/Profiler.h"
#include "runtime/ops/Bf16.h"

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <thread>

#include <sys/stat.h>
#include <unistd.h>

using namespace whale::rt;
using namespace whale::rt::cpu;
using namespace whale::rt::testing;

namespace {

TEST(Allocator, EnforcesTheDeviceLimitWithAClearError) {
  CpuDevice dev("cpu:1", CpuDeviceOptions{1, 1 << 20});
  Tensor a, b;
  ASSERT_TRUE(Tensor::create(dev, DType::F32, {512, 256}, a)); // 512 KiB
  EXPECT_EQ(dev.allocator().inUse(), 512 * 256 * 4);
  Status st = Tensor::create(dev, DType::F32, {1024, 256}, b);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.code(), Status::Code::OutOfMemory);
  EXPECT_EQ(st.message(), "cpu:1: cannot allocate 1.00 MiB with 512.00 KiB in "
                          "use; the device's limit is 1.00 MiB");
  a = Tensor();
  EXPECT_EQ(dev.allocator().inUse(), 0);
  EXPECT_EQ(dev.allocator().peak(), 512 * 256 * 4);
  ASSERT_TRUE(Tensor::create(dev, DType::F32, {1024, 256}, b));
}

TEST(Allocator, ReusesAFreedBlockOfTheSameSizeClass) {
  CachingAllocator cache("cpu:0", 0);
  void *a = nullptr, *b = nullptr, *c = nullptr;
  ASSERT_TRUE(cache.allocate(3 << 20, &a));
  cache.release(a, 3 << 20);
  EXPECT_EQ(cache.inUse(), 0);
  EXPECT_EQ(cache.cachedBytes(), 3 << 20);
  // A request of the same class gets the block back without the system.
  ASSERT_TRUE(cache.allocate((3 << 20) - 1000, &b));
  EXPECT_EQ(b, a);
  EXPECT_EQ(cache.cachedBytes(), 0);
  // Another class does not.
  ASSERT_TRUE(cache.allocate(5 << 20, &c));
  EXPECT_NE(c, b);
  cache.release(b, (3 << 20) - 1000);
  cache.release(c, 5 << 20);
  EXPECT_EQ(cache.cachedBytes(), (3 << 20) + (5 << 20));
  cache.emptyCache();
  EXPECT_EQ(cache.cachedBytes(), 0);
}

TEST(Allocator, ACapturedStepsBlocksAreSetAsideUntilItGoes) {
  CachingAllocator cache("cpu:0", 0);
  const int64_t size = 4096;
  void *before = nullptr, *a = nullptr, *b = nullptr, *c = nullptr;
  ASSERT_TRUE(cache.allocate(size, &before));
  cache.beginHold();
  ASSERT_TRUE(cache.allocate(size, &a));
  ASSERT_TRUE(cache.allocate(size, &b));
  // Within the capture a block given back serves its next request: the
  // replays run in the same order.
  cache.release(a, size);
  ASSERT_TRUE(cache.allocate(size, &c));
  EXPECT_EQ(c, a);
  cache.release(c, size);
  cache.release(before, size); // a block from before, used by the capture
  cache.endHold();
  // Both are the replays' now: a new request gets neither.
  EXPECT_EQ(cache.cachedBytes(), 0);
  EXPECT_EQ(cache.heldBytes(), 2 * size);
  void *d = nullptr;
  ASSERT_TRUE(cache.allocate(size, &d));
  EXPECT_NE(d, a);
  EXPECT_NE(d, before);
  // A block the capture made and still held at its end, given back later,
  // is set aside too; one it never touched is cached as always.
  cache.release(b, size);
  cache.release(d, size);
  EXPECT_EQ(cache.heldBytes(), 3 * size);
  EXPECT_EQ(cache.cachedBytes(), size);
  // The captured step gone, every block serves requests again.
  cache.releaseHeld();
  EXPECT_EQ(cache.heldBytes(), 0);
  EXPECT_EQ(cache.cachedBytes(), 4 * size);
}

TEST(Allocator, SizeClassesLoseAtMostAnEighth) {
  EXPECT_EQ(CachingAllocator::sizeClass(1), 512u);
  EXPECT_EQ(CachingAllocator::sizeClass(513), 1024u);
  EXPECT_EQ(CachingAllocator::sizeClass(1 << 20), size_t(1) << 20);
  EXPECT_EQ(CachingAllocator::sizeClass((1 << 20) + 1),
            (size_t(1) << 20) + (size_t(1) << 17));
  for (size_t bytes = 1000; bytes < (size_t(1) << 34); bytes = bytes * 3 / 2) {
    size_t c = CachingAllocator::sizeClass(bytes);
    EXPECT_GE(c, bytes);
    EXPECT_EQ(c % 64, 0u);
    EXPECT_LE(c - bytes, std::max<size_t>(511, bytes / 8)) << bytes;
  }
}

TEST(Allocator, TheCacheHoldsNoMoreThanThePeakInUse) {
  CachingAllocator cache("cpu:0", 0);
  const int64_t big = 48 << 20;
  std::vector<void *> blocks(3);
  for (void *&p : blocks)
    ASSERT_TRUE(cache.allocate(big, &p));
  for (void *p : blocks)
    cache.release(p, big);
  // The peak in use was 144 MiB, so all three stay cached; one more block
  // freed after them would pass it, and goes back to the system.
  EXPECT_EQ(cache.cachedBytes(), 3 * big);
  void *small = nullptr;
  ASSERT_TRUE(cache.allocate(1 << 20, &small));
  cache.release(small, 1 << 20);
  EXPECT_EQ(cache.cachedBytes(), 3 * big);
}

TEST(Allocator, TheLimitCountsWhatIsInUseNotWhatIsCached) {
  CpuDevice dev("cpu:1", CpuDeviceOptions{1, 1 << 20});
  for (int i = 0; i < 4; ++i) {
    Tensor a;
    ASSERT_TRUE(Tensor::create(dev, DType::F32, {1024, 256}, a)); // 1 MiB
  }
  EXPECT_EQ(dev.allocator().inUse(), 0);
}

TEST(Bf16, RoundsToNearestTiesToEven) {
  EXPECT_EQ(roundToBf16(1.0f), 1.0f);
  // The bf16 spacing at 1 is 2^-7: halfway cases go to the even neighbour.
  EXPECT_EQ(roundToBf16(1.0f + 0x1p-8f), 1.0f);
  EXPECT_EQ(roundToBf16(1.0f + 3 * 0x1p-8f), 1.0f + 0x1p-6f);
  EXPECT_EQ(roundToBf16(1.01f), 1.0f + 0x1p-7f);
  EXPECT_EQ(roundToBf16(-2.5f), -2.5f);
  EXPECT_TRUE(std::isinf(roundToBf16(INFINITY)));
  EXPECT_TRUE(std::isnan(roundToBf16(NAN)));
  EXPECT_TRUE(std::isinf(roundToBf16(3.4e38f))); // past bf16's largest
}

TEST(Bf16, AmpRoundsMatmulInputsAndAccumulatesInFp32) {
  CpuDevice dev("cpu:amp", CpuDeviceOptions{1, 0});
  std::vector<float> a = {1.01f, 2.003f, -0.7071f, 3.14159f},
                     b = {0.333f, -1.001f, 1.414f, 0.5f}, out(4), want(4);
  View<const float> va{a.data(), {2, 2}}, vb{b.data(), {2, 2}};
  dev.setMatmulPrecision(MatmulPrecision::BF16);
  ASSERT_TRUE(
      dev.matmul(va, vb, View<float>{out.data(), {2, 2}}, false, false));
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j)
      want[i * 2 + j] = roundToBf16(a[i * 2]) * roundToBf16(b[j]) +
                        roundToBf16(a[i * 2 + 1]) * roundToBf16(b[2 + j]);
  for (int i = 0; i < 4; ++i)
    EXPECT_FLOAT_EQ(out[i], want[i]);
  std::vector<float> exact(4);
  dev.setMatmulPrecision(MatmulPrecision::F32);
  ASSERT_TRUE(
      dev.matmul(va, vb, View<float>{exact.data(), {2, 2}}, false, false));
  EXPECT_NE(exact, out);
}

TEST(ThreadPool, EveryIndexOnceAndNestedLoopsInline) {
  ThreadPool pool(3);
  std::vector<std::atomic<int>> hits(1000);
  pool.parallelFor(1000, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      hits[i]++;
      // A loop inside a loop runs inline instead of deadlocking.
      pool.parallelFor(2, 1, [&](int64_t, int64_t) {});
    }
  });
  for (auto &h : hits)
    ASSERT_EQ(h.load(), 1);
  for (int round = 0; round < 200; ++round) { // reuse many times
    std::atomic<int64_t> sum{0};
    pool.parallelFor(97, 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i)
        sum += i;
    });
    ASSERT_EQ(sum.load(), 97 * 96 / 2);
  }
}

TEST(ThreadPool, LoopsAfterTheWorkersSleptAndAPoolEndedWhileTheySpin) {
  // Between loops the workers spin a while, then sleep: loops that come
  // quickly, and loops after a pause longer than the spin, each see every
  // index once; a pool destroyed right after a loop (its workers still
  // spinning) and one destroyed after they slept both end.
  for (int pause : {0, 0, 3 * int(ThreadPool::kSpinMicros), 0}) {
    ThreadPool pool(4);
    for (int round = 0; round < 20; ++round) {
      std::vector<std::atomic<int>> hits(61);
      pool.parallelFor(61, 1, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i)
          hits[i]++;
      });
      for (auto &h : hits)
        ASSERT_EQ(h.load(), 1) << "round " << round << ", pause " << pause;
      if (pause)
        std::this_thread::sleep_for(std::chrono::microseconds(pause));
    }
  }
}

TEST(Optimizers, SgdWithMomentumAndWeightDecay) {
  Vec p = {1.0, -2.0}, g = {0.5, 0.25}, v = {0.0, 0.0};
  for (int step = 0; step < 2; ++step)
    sgdStep<double>(testDevice(), mview(p, {2}), cview(g, {2}), v.data(), 0.1,
                    0.9, 0.01);
  // step 1: g' = g + 0.01 p; v = g'; p -= 0.1 v. step 2: v = 0.9 v + g'.
  double g1 = 0.5 + 0.01 * 1.0, p1 = 1.0 - 0.1 * g1;
  double g2 = 0.5 + 0.01 * p1, v2 = 0.9 * g1 + g2, p2 = p1 - 0.1 * v2;
  EXPECT_NEAR(p[0], p2, 1e-15);
}

TEST(Optimizers, AdamFirstStepMovesByLr) {
  // With bias correction the first Adam step is lr * g / (|g| + eps).
  Vec p = {1.0, 1.0}, g = {0.3, -2.0}, m(2), v(2);
  adamStep<double>(testDevice(), mview(p, {2}), cview(g, {2}), m.data(),
                   v.data(), 1, 0.01, 0.9, 0.999, 1e-8, 0.0, false);
  EXPECT_NEAR(p[0], 1.0 - 0.01, 1e-9);
  EXPECT_NEAR(p[1], 1.0 + 0.01, 1e-9);
  // AdamW applies the decay to the parameter, not through the moments.
  Vec q = {2.0}, h = {0.0}, m2(1), v2(1);
  adamStep<double>(testDevice(), mview(q, {1}), cview(h, {1}), m2.data(),
                   v2.data(), 1, 0.1, 0.9, 0.999, 1e-8, 0.5, true);
  EXPECT_NEAR(q[0], 2.0 - 0.1 * 0.5 * 2.0, 1e-12);
}

TEST(Optimizers, ClipByGlobalNorm) {
  Vec a = {3.0, 0.0}, b = {4.0};
  std::vector<View<double>> grads = {mview(a, {2}), mview(b, {1})};
  double norm = clipGradNorm<double>(testDevice(), grads, 1.0);
  EXPECT_DOUBLE_EQ(norm, 5.0);
  EXPECT_NEAR(a[0], 0.6, 1e-15);
  EXPECT_NEAR(b[0], 0.8, 1e-15);
  EXPECT_DOUBLE_EQ(clipGradNorm<double>(testDevice(), grads, 10.0), 1.0);
  EXPECT_NEAR(a[0], 0.6, 1e-15); // under the limit: unchanged
}

TEST(Profiler, WritesAChromeTrace) {
  Profiler prof;
  prof.nameTrack(0, "rank 0 compute");
  { Profiler::Scope s(&prof, "matmul \"f32\"", "compute", 0); }
  prof.record("all_reduce", "comm", 1, Profiler::nowNs(), 2500);
  std::vector<Profiler::Event> events = prof.events();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].name, "matmul \"f32\"");
  std::string json = prof.chromeTraceJson();
  EXPECT_NE(json.find("\"traceEvents\""), std::string::npos);
  EXPECT_NE(json.find("\"name\": \"matmul \\\"f32\\\"\""), std::string::npos);
  EXPECT_NE(json.find("\"tid\": 1, \"ts\": "), std::string::npos);
  EXPECT_NE(json.find("\"dur\": 2.500"), std::string::npos);
  EXPECT_NE(json.find("\"thread_name\""), std::string::npos);
  // Track 2r + 1 is rank r's communication: process r, thread 1.
  prof.nameRank(3, "rank 3");
  prof.record("send", "communication", 7, Profiler::nowNs(), 10);
  json = prof.chromeTraceJson();
  EXPECT_NE(json.find("\"process_name\", \"pid\": 3, \"tid\": 0"),
            std::string::npos);
  EXPECT_NE(json.find("\"pid\": 3, \"tid\": 1, \"ts\": "), std::string::npos);
}

// A trace is written whole or not at all (issue 92 item 7): when the write
// fails (here its temporary name is taken by a folder, as a full disk
// would fail it), the earlier trace stays as it was, not truncated JSON.
TEST(Profiler, AFailedWriteLeavesTheEarlierTraceAsItWas) {
  const std::string path = whale::testing::tempPath("kept-trace.json");
  {
    std::ofstream f(path);
    f << "{\"earlier\": true}";
  }
  const std::string blocker = path + ".tmp" + std::to_string(::getpid());
  ASSERT_EQ(::mkdir(blocker.c_str(), 0700), 0);
  Profiler prof;
  prof.record("matmul", "compute", 0, Profiler::nowNs(), 10);
  Status st = prof.writeChromeTrace(path);
  ::rmdir(blocker.c_str());
  EXPECT_FALSE(st);
  EXPECT_NE(st.message().find("cannot write the trace '" + path + "'"),
            std::string::npos)
      << st.message();
  std::ifstream f(path);
  std::string kept((std::istreambuf_iterator<char>(f)),
                   std::istreambuf_iterator<char>());
  EXPECT_EQ(kept, "{\"earlier\": true}");
  // And a write that works replaces it whole.
  ASSERT_TRUE(prof.writeChromeTrace(path));
  std::ifstream g(path);
  std::string now((std::istreambuf_iterator<char>(g)),
                  std::istreambuf_iterator<char>());
  EXPECT_EQ(now, prof.chromeTraceJson());
  std::remove(path.c_str());
}

TEST(Profiler, APausedProfilerTimesNoScopeButRecordsWhatItIsGiven) {
  Profiler prof;
  prof.setPaused(true);
  { Profiler::Scope s(&prof, "matmul", "compute", 0); }
  EXPECT_TRUE(prof.events().empty());
  // The driver's step spans are recorded whatever the pause.
  prof.record("step", "untraced", 2, Profiler::nowNs(), 10);
  prof.setPaused(false);
  { Profiler::Scope s(&prof, "matmul", "compute", 0, 4); }
  std::vector<Profiler::Event> events = prof.events();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].category, "untraced");
  EXPECT_EQ(events[1].name, "matmul");
  EXPECT_EQ(events[1].site, 4);
}

} // namespace
