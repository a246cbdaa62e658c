//===- RuntimeFixture.h - a runtime context for tests ------------*- C++
//-*-===//

#ifndef WHALE_TEST_UNIT_RUNTIMEFIXTURE_H
#define WHALE_TEST_UNIT_RUNTIMEFIXTURE_H

#include "runtime/WhaleRuntime.h"

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

namespace whale::testing {

/// The first `n` floats of tensor `t` (host memory).
inline std::vector<float> floatsOf(whale_rt_tensor *t, size_t n) {
  const float *p = static_cast<const float *>(whale_rt_tensor_data(t));
  return std::vector<float>(p, p + n);
}

/// A runtime context that tests make tensors in; destroyed with the test.
struct TestRuntime {
  whale_rt_context *ctx;
  explicit TestRuntime(uint64_t seed = 1, int64_t memoryLimit = 0,
                       int threads = 2)
      : ctx(whale_rt_context_create("cpu:0", threads, memoryLimit, seed)) {}
  ~TestRuntime() { whale_rt_context_destroy(ctx); }
  TestRuntime(const TestRuntime &) = delete;
  TestRuntime &operator=(const TestRuntime &) = delete;

  whale_rt_tensor *make(int32_t dtype, std::vector<int64_t> shape) {
    whale_rt_tensor *t = nullptr;
    EXPECT_EQ(whale_rt_tensor_create(ctx, dtype,
                                     static_cast<int32_t>(shape.size()),
                                     shape.data(), &t),
              WHALE_RT_OK)
        << whale_rt_last_error(ctx);
    return t;
  }
  whale_rt_tensor *f32(std::vector<int64_t> shape, std::vector<float> values) {
    whale_rt_tensor *t = make(WHALE_RT_F32, shape);
    std::memcpy(whale_rt_tensor_data(t), values.data(),
                values.size() * sizeof(float));
    return t;
  }
  template <class T> static T *data(whale_rt_tensor *t) {
    return static_cast<T *>(whale_rt_tensor_data(t));
  }
};

/// A communicator of two ranks and a context bound to each: as replica 0
/// and 1 of one stage, or as stage 0 and 1 of one replica. Each runs on
/// its own thread for collectives and sends.
struct TwoRanks {
  enum class Layout { Replicas, Stages };
  std::unique_ptr<whale_rt_comm, void (*)(whale_rt_comm *)> comm{
      whale_rt_comm_create(2, 10.0), whale_rt_comm_destroy};
  TestRuntime rank[2];
  /// `beforeBind(ctx, r)` may change rank r's context before it binds.
  TwoRanks(Layout layout, uint64_t seed,
           const std::function<void(whale_rt_context *, int)> &beforeBind)
      : rank{TestRuntime(seed), TestRuntime(seed)} {
    const int32_t grid[] = {0, 1};
    const bool stages = layout == Layout::Stages;
    for (int32_t r = 0; r < 2; ++r) {
      if (beforeBind)
        beforeBind(rank[r].ctx, r);
      EXPECT_EQ(whale_rt_context_bind(rank[r].ctx, comm.get(), stages ? 2 : 1,
                                      stages ? 1 : 2, grid, stages ? r : 0,
                                      stages ? 0 : r),
                WHALE_RT_OK);
    }
  }
  /// Runs body(r) for both ranks at once (collectives need both).
  void onBoth(const std::function<void(int)> &body) {
    std::thread other(body, 1);
    body(0);
    other.join();
  }
};

struct TwoReplicas : TwoRanks {
  explicit TwoReplicas(
      uint64_t seed = 1,
      const std::function<void(whale_rt_context *, int)> &beforeBind = {})
      : TwoRanks(Layout::Replicas, seed, beforeBind) {}
};

/// Two pipeline stages, rank r at stage r.
struct TwoStages : TwoRanks {
  explicit TwoStages(
      uint64_t seed = 1,
      const std::function<void(whale_rt_context *, int)> &beforeBind = {})
      : TwoRanks(Layout::Stages, seed, beforeBind) {}
};

/// Four replicas of one stage, replica r at rank r, each on its own thread
/// for collectives (onAll).
struct FourReplicas {
  std::unique_ptr<whale_rt_comm, void (*)(whale_rt_comm *)> comm{
      whale_rt_comm_create(4, 10.0), whale_rt_comm_destroy};
  TestRuntime rank[4];
  FourReplicas() {
    const int32_t grid[] = {0, 1, 2, 3};
    for (int32_t r = 0; r < 4; ++r)
      EXPECT_EQ(
          whale_rt_context_bind(rank[r].ctx, comm.get(), 1, 4, grid, 0, r),
          WHALE_RT_OK);
  }
  /// Runs body(r) for the four ranks at once (collectives need them all).
  void onAll(const std::function<void(int)> &body) {
    std::vector<std::thread> others;
    for (int r = 1; r < 4; ++r)
      others.emplace_back(body, r);
    body(0);
    for (std::thread &t : others)
      t.join();
  }
};

} // namespace whale::testing

#endif
