//===- SyntheticSourceTest.cpp - synthetic(...) made once, ahead ----------===//

#include "runtime/run/SyntheticSource.h"

#include "runtime/data/DataOrder.h"

#include <gtest/gtest.h>

#include <set>

namespace {

using whale::SyntheticSource;

/// The teacher as it was first written: every weight hashed again for
/// every sample (the labels a dense teacher must keep).
void reference(uint64_t seed, int64_t batch, int64_t features, int64_t classes,
               int64_t step, std::vector<float> &x, std::vector<int32_t> &y) {
  auto uniform = [](uint64_t key, uint64_t index) {
    return static_cast<float>(
        (whale::rt::streamValue(key, index) >> 11) * 0x1.0p-52 - 1.0);
  };
  const uint64_t key = whale::rt::mix64(seed ^ 0x5EED),
                 teacherKey = whale::rt::mix64(seed ^ 0x7EAC4E2);
  x.assign(batch * features, 0);
  y.assign(batch, 0);
  for (int64_t b = 0; b < batch; ++b) {
    uint64_t sample = static_cast<uint64_t>(step * batch + b);
    float *row = x.data() + b * features;
    for (int64_t j = 0; j < features; ++j)
      row[j] = uniform(key, sample * features + j);
    int32_t best = 0;
    float bestScore = -1e30f;
    for (int64_t c = 0; c < classes; ++c) {
      float score = 0;
      for (int64_t j = 0; j < features; ++j)
        score += row[j] * uniform(teacherKey, j * classes + c);
      if (score > bestScore) {
        bestScore = score;
        best = static_cast<int32_t>(c);
      }
    }
    y[b] = best;
  }
}

TEST(SyntheticSource, ADenseTeacherGivesTheLabelsItAlwaysGave) {
  for (auto [batch, features, classes] :
       {std::tuple<int64_t, int64_t, int64_t>{64, 32, 10},
        {32, 3 * 8 * 8, 10},
        {300, 100, 1000}}) {
    SyntheticSource source(7, batch, features, classes);
    for (int64_t step : {0, 1, 5}) {
      std::vector<float> x;
      std::vector<int32_t> y, want;
      std::vector<float> wantX;
      source.make(step, x, y);
      reference(7, batch, features, classes, step, wantX, want);
      EXPECT_EQ(x, wantX);
      EXPECT_EQ(y, want) << features << "x" << classes << " step " << step;
    }
  }
}

TEST(SyntheticSource, ALargeTeacherIsLowRankAndLabelsManyClasses) {
  // 512 x 40,000 weights are past the dense limit.
  const int64_t batch = 256, features = 512, classes = 40000;
  ASSERT_GT(features * classes, SyntheticSource::kDenseTeacher);
  SyntheticSource a(3, batch, features, classes),
      b(3, batch, features, classes);
  std::vector<float> xa, xb;
  std::vector<int32_t> ya, yb;
  a.make(2, xa, ya);
  b.make(2, xb, yb);
  EXPECT_EQ(ya, yb); // a pure function of the seed and the sample
  std::set<int32_t> distinct(ya.begin(), ya.end());
  for (int32_t c : ya) {
    EXPECT_GE(c, 0);
    EXPECT_LT(c, classes);
  }
  // A teacher of rank 64 still spreads 256 samples over many classes.
  EXPECT_GT(distinct.size(), 64u);
}

TEST(SyntheticSource, BatchesMadeAheadAreTheStepsOwnInAnyOrder) {
  // Enough work a batch to be made ahead (kWorkAhead).
  const int64_t batch = 16, features = 64, classes = 64;
  ASSERT_GE(batch * (8 * features + features * classes),
            SyntheticSource::kWorkAhead);
  SyntheticSource source(11, batch, features, classes);
  std::vector<float> xs(batch * features);
  std::vector<int32_t> ys(batch);
  whale_rt_tensor *x = nullptr, *y = nullptr;
  whale_rt_context *ctx = whale_rt_context_create("cpu:0", 1, 0, 1);
  ASSERT_NE(ctx, nullptr);
  const int64_t xShape[] = {batch, features}, yShape[] = {batch};
  ASSERT_EQ(whale_rt_tensor_create(ctx, WHALE_RT_F32, 2, xShape, &x),
            WHALE_RT_OK);
  ASSERT_EQ(whale_rt_tensor_create(ctx, WHALE_RT_I32, 1, yShape, &y),
            WHALE_RT_OK);
  std::vector<whale_rt_tensor *> inputs = {x, y};
  // In order (each made ahead while the last was in use), then back to an
  // earlier step (a resumed run), then on.
  for (int64_t step : {0, 1, 2, 1, 2, 7}) {
    ASSERT_EQ(source.fill(step, inputs), "");
    std::vector<float> wantX;
    std::vector<int32_t> want;
    reference(11, batch, features, classes, step, wantX, want);
    const auto *gotX = static_cast<const float *>(whale_rt_tensor_data(x));
    const auto *gotY = static_cast<const int32_t *>(whale_rt_tensor_data(y));
    EXPECT_EQ(std::vector<float>(gotX, gotX + batch * features), wantX);
    EXPECT_EQ(std::vector<int32_t>(gotY, gotY + batch), want)
        << "step " << step;
  }
  whale_rt_context_destroy(ctx);
}

} // namespace
