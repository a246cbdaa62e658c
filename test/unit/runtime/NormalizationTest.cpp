//===- NormalizationTest.cpp - softmax, layernorm, embedding, losses ------===//

#include "GradCheck.h"

using namespace whale::rt;
using namespace whale::rt::cpu;
using namespace whale::rt::testing;

namespace {

TEST(Softmax, RowsSumToOneAlongAnyAxis) {
  Shape s = {3, 4, 5};
  Vec x = randomVec(60, -3, 3, 1);
  for (int64_t axis = 0; axis < 3; ++axis) {
    Vec y(60);
    softmax<double>(testDevice(), cview(x, s), axis, mview(y, s));
    int64_t stride = axis == 0 ? 20 : axis == 1 ? 5 : 1;
    for (int64_t i = 0; i < 60; ++i) {
      if ((i / stride) % s[axis] != 0)
        continue; // the first element of each line along the axis
      double sum = 0;
      for (int64_t j = 0; j < s[axis]; ++j)
        sum += y[i + j * stride];
      EXPECT_NEAR(sum, 1.0, 1e-12);
    }
  }
}

TEST(Softmax, GradientsAlongEachAxis) {
  Shape s = {3, 4, 5};
  for (int64_t axis = 0; axis < 3; ++axis)
    gradCheck(
        {randomVec(60, -2, 2, 2)},
        [&](const std::vector<Vec> &in) {
          Vec y(60);
          softmax<double>(testDevice(), cview(in[0], s), axis, mview(y, s));
          return y;
        },
        [&](const std::vector<Vec> &in, const Vec &dy) {
          Vec y(60), dx(60);
          softmax<double>(testDevice(), cview(in[0], s), axis, mview(y, s));
          softmaxBackward<double>(testDevice(), cview(y, s), cview(dy, s), axis,
                                  mview(dx, s));
          return std::vector<Vec>{dx};
        });
}

TEST(LayerNorm, NormalizesAndItsGradients) {
  Shape s = {4, 3, 8}, v = {8};
  Vec x = randomVec(96, -2, 3, 3), ones(8, 1.0), zeros(8, 0.0), y(96), mean(12),
      rstd(12);
  layerNorm<double>(testDevice(), cview(x, s), cview(ones, v), cview(zeros, v),
                    1e-5, mview(y, s), mean.data(), rstd.data());
  for (int r = 0; r < 12; ++r) {
    double mu = 0, var = 0;
    for (int j = 0; j < 8; ++j)
      mu += y[r * 8 + j] / 8;
    for (int j = 0; j < 8; ++j)
      var += (y[r * 8 + j] - mu) * (y[r * 8 + j] - mu) / 8;
    EXPECT_NEAR(mu, 0, 1e-12);
    EXPECT_NEAR(var, 1, 1e-4); // eps shrinks it slightly
  }
  gradCheck(
      {randomVec(96, -2, 3, 4), randomVec(8, 0.5, 1.5, 5),
       randomVec(8, -1, 1, 6)},
      [&](const std::vector<Vec> &in) {
        Vec out(96), mu(12), rs(12);
        layerNorm<double>(testDevice(), cview(in[0], s), cview(in[1], v),
                          cview(in[2], v), 1e-5, mview(out, s), mu.data(),
                          rs.data());
        return out;
      },
      [&](const std::vector<Vec> &in, const Vec &dy) {
        Vec out(96), mu(12), rs(12), dx(96), dg(8), db(8);
        layerNorm<double>(testDevice(), cview(in[0], s), cview(in[1], v),
                          cview(in[2], v), 1e-5, mview(out, s), mu.data(),
                          rs.data());
        layerNormBackward<double>(
            testDevice(), cview(in[0], s), cview(in[1], v), mu.data(),
            rs.data(), cview(dy, s), mview(dx, s), mview(dg, v), mview(db, v));
        return std::vector<Vec>{dx, dg, db};
      });
}

TEST(Embedding, GathersRowsAndScattersGradients) {
  Shape ts = {5, 3}, is = {2, 3}, os = {2, 3, 3};
  Vec table = randomVec(15, -1, 1, 7);
  std::vector<int32_t> ids = {4, 0, 4, 2, 2, 1}; // repeats accumulate
  View<const int32_t> iv{ids.data(), is};
  Vec out(18);
  Status st = embedding<double, int32_t>(testDevice(), cview(table, ts), iv,
                                         mview(out, os));
  ASSERT_TRUE(st) << st.message();
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 3; ++j)
      EXPECT_EQ(out[i * 3 + j], table[ids[i] * 3 + j]);
  gradCheck(
      {table},
      [&](const std::vector<Vec> &in) {
        Vec o(18);
        (void)embedding<double, int32_t>(testDevice(), cview(in[0], ts), iv,
                                         mview(o, os));
        return o;
      },
      [&](const std::vector<Vec> &, const Vec &dout) {
        Vec dt(15);
        embeddingBackward<double, int32_t>(testDevice(), iv, cview(dout, os),
                                           mview(dt, ts));
        return std::vector<Vec>{dt};
      });
}

TEST(Embedding, IdOutOfRangeIsAnError) {
  Shape ts = {5, 3}, is = {2};
  Vec table(15), out(6);
  std::vector<int64_t> ids = {1, 5};
  Status st = embedding<double, int64_t>(testDevice(), cview(table, ts),
                                         View<const int64_t>{ids.data(), is},
                                         mview(out, {2, 3}));
  ASSERT_FALSE(st);
  EXPECT_EQ(st.message(),
            "embedding id 5 at position 1 is outside the table's 5 rows");
}

TEST(CrossEntropy, LossAndGradients) {
  Shape ls = {2, 3, 7}, ys = {2, 3};
  std::vector<int32_t> labels = {0, 6, 3, 3, 1, 5};
  View<const int32_t> yv{labels.data(), ys};
  Vec logits = randomVec(42, -2, 2, 8), loss(6), lse(6);
  Status st = crossEntropy<double, int32_t>(testDevice(), cview(logits, ls), yv,
                                            mview(loss, ys), lse.data());
  ASSERT_TRUE(st) << st.message();
  for (int i = 0; i < 6; ++i) {
    double sum = 0;
    for (int j = 0; j < 7; ++j)
      sum += std::exp(logits[i * 7 + j]);
    EXPECT_NEAR(loss[i], std::log(sum) - logits[i * 7 + labels[i]], 1e-12);
  }
  gradCheck(
      {logits},
      [&](const std::vector<Vec> &in) {
        Vec l(6), s(6);
        (void)crossEntropy<double, int32_t>(testDevice(), cview(in[0], ls), yv,
                                            mview(l, ys), s.data());
        return l;
      },
      [&](const std::vector<Vec> &in, const Vec &dl) {
        Vec l(6), s(6), dx(42);
        (void)crossEntropy<double, int32_t>(testDevice(), cview(in[0], ls), yv,
                                            mview(l, ys), s.data());
        crossEntropyBackward<double, int32_t>(testDevice(), cview(in[0], ls),
                                              yv, s.data(), cview(dl, ys),
                                              mview(dx, ls));
        return std::vector<Vec>{dx};
      });
}

TEST(CrossEntropy, LabelOutOfRangeIsAnError) {
  Vec logits(6), loss(2), lse(2);
  std::vector<int32_t> labels = {1, -1};
  Status st = crossEntropy<double, int32_t>(
      testDevice(), cview(logits, {2, 3}),
      View<const int32_t>{labels.data(), {2}}, mview(loss, {2}), lse.data());
  ASSERT_FALSE(st);
  EXPECT_EQ(st.message(), "label -1 at position 1 is outside the 3 classes");
}

} // namespace
