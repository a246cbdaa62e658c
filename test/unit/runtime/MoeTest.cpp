//===- MoeTest.cpp - a mixture of experts' routing ------------------------===//

#include "../RandomValues.h"
#include "../RuntimeFixture.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace {

using whale::testing::randomValues;
using whale::testing::TestRuntime;

/// i32 choices [G, S, k] in a tensor.
whale_rt_tensor *choices(TestRuntime &rt, std::vector<int64_t> shape,
                         const std::vector<int32_t> &values) {
  whale_rt_tensor *t = rt.make(WHALE_RT_I32, shape);
  std::memcpy(whale_rt_tensor_data(t), values.data(),
              values.size() * sizeof(int32_t));
  return t;
}

TEST(Moe, FirstChoicesTakeSlotsFirstInTokenOrderAndFullExpertsDrop) {
  TestRuntime rt;
  const int64_t G = 2, S = 4, k = 2, E = 3, C = 2, D = 3;
  // Group 0: first choices 0, 0, 0, 1 (the third finds expert 0 full), then
  // second choices 1, 2, 1, 0 (the third finds expert 1 full, the fourth
  // expert 0). Group 1: all choose 2 then 0, so its last two tokens drop
  // both.
  whale_rt_tensor *e = choices(rt, {G, S, k},
                               {0, 1, 0, 2, 0, 1, 1, 0, //
                                2, 0, 2, 0, 2, 0, 2, 0});
  std::vector<float> xv(G * S * D);
  for (int64_t i = 0; i < G * S * D; ++i)
    xv[i] = static_cast<float>(100 * (i / (S * D)) + 10 * (i / D % S) +
                               i % D + 1);
  whale_rt_tensor *x = rt.f32({G, S, D}, xv);
  whale_rt_tensor *slots = rt.make(WHALE_RT_F32, {E, G * C, D});
  ASSERT_EQ(whale_rt_moe_dispatch(rt.ctx, x, e, nullptr, slots), WHALE_RT_OK)
      << whale_rt_last_error(rt.ctx);
  // Row e * G * C + g * C + c holds slot c of expert e in group g: the
  // token it holds, or -1 for an empty slot.
  const int tokenAt[] = {0, 1, /*g1*/ 4, 5,  // expert 0
                         3, 0, /*g1*/ -1, -1, // expert 1
                         1, -1, /*g1*/ 4, 5}; // expert 2
  const float *sv = TestRuntime::data<float>(slots);
  for (int64_t row = 0; row < E * G * C; ++row)
    for (int64_t d = 0; d < D; ++d)
      EXPECT_EQ(sv[row * D + d], tokenAt[row] < 0 ? 0.0f
                                                  : xv[tokenAt[row] * D + d])
          << "row " << row << " column " << d;

  // Back: each token the sum of its kept choices' rows, weighed by gates;
  // tokens 2 and 3 of group 1 kept nothing.
  std::vector<float> gv = randomValues(G * S * k, 5, 0, 1);
  whale_rt_tensor *gates = rt.f32({G, S, k}, gv);
  whale_rt_tensor *y = rt.make(WHALE_RT_F32, {G, S, D});
  ASSERT_EQ(whale_rt_moe_combine(rt.ctx, slots, e, gates, y), WHALE_RT_OK)
      << whale_rt_last_error(rt.ctx);
  const bool kept[] = {1, 1, 1, 1, 0, 0, 1, 0, /*g1*/ 1, 1, 1, 1, 0, 0, 0, 0};
  const float *yv = TestRuntime::data<float>(y);
  for (int64_t t = 0; t < G * S; ++t)
    for (int64_t d = 0; d < D; ++d) {
      float want = 0;
      for (int64_t j = 0; j < k; ++j)
        if (kept[t * k + j])
          want += gv[t * k + j] * xv[t * D + d];
      EXPECT_FLOAT_EQ(yv[t * D + d], want) << "token " << t << " column " << d;
    }
}

/// Sum of a[i] * b[i].
double dot(whale_rt_tensor *a, whale_rt_tensor *b, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i)
    s += double(TestRuntime::data<float>(a)[i]) * TestRuntime::data<float>(b)[i];
  return s;
}

TEST(Moe, CombineIsDispatchsAdjointAndGateGradientsAreItsDerivative) {
  TestRuntime rt;
  const int64_t G = 3, S = 7, k = 2, E = 4, C = 3, D = 5;
  std::vector<int32_t> ev(G * S * k);
  for (int64_t t = 0; t < G * S; ++t) {
    ev[t * k] = static_cast<int32_t>((t * 7 + 1) % E);
    ev[t * k + 1] = static_cast<int32_t>((ev[t * k] + 1 + t % 3) % E);
  }
  whale_rt_tensor *e = choices(rt, {G, S, k}, ev);
  std::vector<float> gv = randomValues(G * S * k, 2, 0, 1);
  whale_rt_tensor *x = rt.f32({G, S, D}, randomValues(G * S * D, 3)),
                  *w = rt.f32({E, G * C, D}, randomValues(E * G * C * D, 4)),
                  *gates = rt.f32({G, S, k}, gv),
                  *slots = rt.make(WHALE_RT_F32, {E, G * C, D}),
                  *back = rt.make(WHALE_RT_F32, {G, S, D}),
                  *dg = rt.make(WHALE_RT_F32, {G, S, k});
  ASSERT_EQ(whale_rt_moe_dispatch(rt.ctx, x, e, gates, slots), WHALE_RT_OK);
  ASSERT_EQ(whale_rt_moe_combine(rt.ctx, w, e, gates, back), WHALE_RT_OK);
  // <dispatch(x), w> = <x, combine(w)>: each is the linear map's transpose.
  EXPECT_NEAR(dot(slots, w, E * G * C * D), dot(x, back, G * S * D), 1e-4);

  // d<combine(w, gates), x> / d gate = moe_gate_grad(x, w), by central
  // differences (the output is linear in each gate, so they are exact).
  ASSERT_EQ(whale_rt_moe_gate_grad(rt.ctx, x, w, e, dg), WHALE_RT_OK);
  int nonzero = 0;
  for (int64_t i = 0; i < G * S * k; ++i) {
    const float h = 0.25f, g0 = gv[i];
    TestRuntime::data<float>(gates)[i] = g0 + h;
    ASSERT_EQ(whale_rt_moe_combine(rt.ctx, w, e, gates, back), WHALE_RT_OK);
    double up = dot(back, x, G * S * D);
    TestRuntime::data<float>(gates)[i] = g0 - h;
    ASSERT_EQ(whale_rt_moe_combine(rt.ctx, w, e, gates, back), WHALE_RT_OK);
    double down = dot(back, x, G * S * D);
    TestRuntime::data<float>(gates)[i] = g0;
    EXPECT_NEAR(TestRuntime::data<float>(dg)[i], (up - down) / (2 * h), 1e-4)
        << "choice " << i;
    nonzero += TestRuntime::data<float>(dg)[i] != 0.0f;
  }
  // Some choices were dropped (E * C = 12 slots for 14 choices a group),
  // most were kept.
  EXPECT_GT(nonzero, G * S);
  EXPECT_LT(nonzero, G * S * k);
}

TEST(Moe, AChoiceOutsideTheExpertsAndBadShapesAreErrors) {
  TestRuntime rt;
  whale_rt_tensor *x = rt.f32({1, 2, 2}, {1, 2, 3, 4});
  whale_rt_tensor *e = choices(rt, {1, 2, 1}, {0, 3});
  whale_rt_tensor *slots = rt.make(WHALE_RT_F32, {3, 2, 2});
  EXPECT_EQ(whale_rt_moe_dispatch(rt.ctx, x, e, nullptr, slots),
            WHALE_RT_INVALID_ARGUMENT);
  EXPECT_NE(std::string(whale_rt_last_error(rt.ctx)).find("expert 3"),
            std::string::npos)
      << whale_rt_last_error(rt.ctx);
  whale_rt_tensor *odd = rt.make(WHALE_RT_F32, {3, 3, 3});
  whale_rt_tensor *ok = choices(rt, {1, 2, 1}, {0, 2});
  EXPECT_EQ(whale_rt_moe_dispatch(rt.ctx, x, ok, nullptr, odd),
            WHALE_RT_INVALID_ARGUMENT);

  whale_rt_tensor *hot = rt.make(WHALE_RT_F32, {1, 2, 1, 3});
  ASSERT_EQ(whale_rt_one_hot(rt.ctx, ok, 3, hot), WHALE_RT_OK);
  const float want[] = {1, 0, 0, 0, 0, 1};
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(TestRuntime::data<float>(hot)[i], want[i]);
  EXPECT_EQ(whale_rt_one_hot(rt.ctx, e, 3, hot), WHALE_RT_INVALID_ARGUMENT);
}

} // namespace
