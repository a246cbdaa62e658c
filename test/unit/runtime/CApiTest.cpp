//===- CApiTest.cpp - the runtime's C ABI ---------------------------------===//

#include "../RandomValues.h"
#include "../RuntimeFixture.h"
#include "test/unit/TempPath.h"

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

namespace {

/// The runtime context of these tests.
struct CApiCtx : whale::testing::TestRuntime {
  explicit CApiCtx(int64_t limit = 0, uint64_t seed = 1)
      : TestRuntime(seed, limit) {}
};

TEST(RuntimeCApi, AMatmulAndItsShapeCheck) {
  CApiCtx c;
  whale_rt_tensor *a = c.f32({2, 3}, {1, 2, 3, 4, 5, 6});
  whale_rt_tensor *b = c.f32({3, 2}, {1, 0, 0, 1, 1, 1});
  whale_rt_tensor *out = c.make(WHALE_RT_F32, {2, 2});
  ASSERT_EQ(whale_rt_matmul(c.ctx, a, b, out, 0, 0), WHALE_RT_OK);
  EXPECT_EQ(whale::testing::floatsOf(out, 4),
            (std::vector<float>{4, 5, 10, 11}));
  whale_rt_tensor *wrong = c.make(WHALE_RT_F32, {3, 3});
  EXPECT_EQ(whale_rt_matmul(c.ctx, a, b, wrong, 0, 0),
            WHALE_RT_INVALID_ARGUMENT);
  EXPECT_STREQ(whale_rt_last_error(c.ctx),
               "matmul: the output is [3, 3] but the result is [2, 2]");
  EXPECT_EQ(whale_rt_matmul(c.ctx, a, a, out, 0, 0), WHALE_RT_INVALID_ARGUMENT);
  EXPECT_STREQ(whale_rt_last_error(c.ctx),
               "matmul: [2, 3] and [2, 3] do not fit");
}

TEST(RuntimeCApi, ParametersAreDeterministicPerSeedAndName) {
  int64_t shape[] = {64, 32};
  double normal[] = {0.0, 0.02}, gain[] = {1.0};
  auto make = [&](uint64_t seed, const char *name, int32_t kind,
                  const double *args, int32_t n) {
    CApiCtx c(0, seed);
    whale_rt_tensor *p = nullptr;
    EXPECT_EQ(whale_rt_param(c.ctx, name, kind, args, n, 2, shape, &p),
              WHALE_RT_OK);
    return whale::testing::floatsOf(p, 64 * 32);
  };
  std::vector<float> w = make(7, "m/w", WHALE_RT_INIT_NORMAL, normal, 2);
  EXPECT_EQ(w, make(7, "m/w", WHALE_RT_INIT_NORMAL, normal, 2));
  EXPECT_NE(w, make(7, "m/v", WHALE_RT_INIT_NORMAL, normal, 2));
  EXPECT_NE(w, make(8, "m/w", WHALE_RT_INIT_NORMAL, normal, 2));
  double mean = 0, var = 0;
  for (float v : w)
    mean += v / w.size();
  for (float v : w)
    var += (v - mean) * (v - mean) / w.size();
  EXPECT_NEAR(mean, 0, 0.002); // 2048 draws: sd of the mean 0.0004
  EXPECT_NEAR(std::sqrt(var), 0.02, 0.001);
  // Xavier: U(-a, a), a = sqrt(6 / (64 + 32)) = 0.25.
  std::vector<float> x = make(7, "m/x", WHALE_RT_INIT_XAVIER, gain, 1);
  float lo = 1, hi = -1;
  for (float v : x) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  EXPECT_GE(lo, -0.25f);
  EXPECT_LE(hi, 0.25f);
  EXPECT_LT(lo, -0.24f);
  EXPECT_GT(hi, 0.24f);
}

TEST(RuntimeCApi, AParameterIsOneTensor) {
  CApiCtx c;
  int64_t shape[] = {4}, other[] = {5};
  whale_rt_tensor *p1 = nullptr, *p2 = nullptr, *p3 = nullptr;
  ASSERT_EQ(
      whale_rt_param(c.ctx, "b", WHALE_RT_INIT_ONES, nullptr, 0, 1, shape, &p1),
      WHALE_RT_OK);
  ASSERT_EQ(
      whale_rt_param(c.ctx, "b", WHALE_RT_INIT_ONES, nullptr, 0, 1, shape, &p2),
      WHALE_RT_OK);
  EXPECT_EQ(p1, p2);
  EXPECT_EQ(whale::testing::floatsOf(p1, 4), (std::vector<float>{1, 1, 1, 1}));
  EXPECT_EQ(
      whale_rt_param(c.ctx, "b", WHALE_RT_INIT_ONES, nullptr, 0, 1, other, &p3),
      WHALE_RT_INVALID_ARGUMENT);
  EXPECT_STREQ(whale_rt_last_error(c.ctx),
               "param 'b' exists as [4], asked for as [5]");
}

TEST(RuntimeCApi, TheMemoryLimitIsAnErrorNotACrash) {
  CApiCtx c(1000);
  whale_rt_tensor *t = nullptr;
  int64_t shape[] = {100, 100};
  EXPECT_EQ(whale_rt_tensor_create(c.ctx, WHALE_RT_F32, 2, shape, &t),
            WHALE_RT_OUT_OF_MEMORY);
  EXPECT_STREQ(whale_rt_last_error(c.ctx),
               "cpu:0: cannot allocate 39.06 KiB with 0 B in use; the device's "
               "limit is 1000 B");
  EXPECT_EQ(whale_rt_memory_in_use(c.ctx), 0);
}

TEST(RuntimeCApi, AClassifierForwardPass) {
  // mean(cross_entropy(relu(x @ w + b) @ v, y)) through the ABI, against a
  // hand computation.
  CApiCtx c;
  whale_rt_tensor *x = c.f32({2, 2}, {1, -1, 0.5f, 2});
  whale_rt_tensor *w = c.f32({2, 3}, {1, 0, -1, 0, 1, 1});
  whale_rt_tensor *b = c.f32({3}, {0, 0.5f, 0});
  whale_rt_tensor *v = c.f32({3, 2}, {1, 0, 0, 1, 1, 1});
  whale_rt_tensor *y = c.make(WHALE_RT_I32, {2});
  int32_t labels[] = {0, 1};
  std::memcpy(whale_rt_tensor_data(y), labels, sizeof labels);
  whale_rt_tensor *h = c.make(WHALE_RT_F32, {2, 3}),
                  *hb = c.make(WHALE_RT_F32, {2, 3}),
                  *r = c.make(WHALE_RT_F32, {2, 3}),
                  *l = c.make(WHALE_RT_F32, {2, 2}),
                  *ce = c.make(WHALE_RT_F32, {2}),
                  *loss = c.make(WHALE_RT_F32, {});
  int64_t axes[] = {0};
  ASSERT_EQ(whale_rt_matmul(c.ctx, x, w, h, 0, 0), WHALE_RT_OK);
  ASSERT_EQ(whale_rt_binary(c.ctx, WHALE_RT_ADD, h, b, hb), WHALE_RT_OK);
  ASSERT_EQ(whale_rt_unary(c.ctx, WHALE_RT_RELU, hb, r), WHALE_RT_OK);
  ASSERT_EQ(whale_rt_matmul(c.ctx, r, v, l, 0, 0), WHALE_RT_OK);
  ASSERT_EQ(whale_rt_cross_entropy(c.ctx, l, y, ce), WHALE_RT_OK);
  ASSERT_EQ(whale_rt_reduce(c.ctx, WHALE_RT_MEAN, ce, 1, axes, loss),
            WHALE_RT_OK);
  // x@w+b = [[1, -0.5, -2], [0.5, 2.5, 1.5]]; relu: [[1,0,0],[0.5,2.5,1.5]]
  // logits = [[1, 0], [2, 4]]; losses: lse-1, lse-4
  double l0 = std::log(std::exp(1.0) + std::exp(0.0)) - 1;
  double l1 = std::log(std::exp(2.0) + std::exp(4.0)) - 4;
  EXPECT_NEAR(whale::testing::floatsOf(loss, 1)[0], (l0 + l1) / 2, 1e-6);
  // A label out of range is reported, not read out of bounds.
  labels[1] = 2;
  std::memcpy(whale_rt_tensor_data(y), labels, sizeof labels);
  EXPECT_EQ(whale_rt_cross_entropy(c.ctx, l, y, ce), WHALE_RT_INVALID_ARGUMENT);
  EXPECT_STREQ(whale_rt_last_error(c.ctx),
               "label 2 at position 1 is outside the 2 classes");
}

TEST(RuntimeCApi, LayoutOps) {
  CApiCtx c;
  whale_rt_tensor *x = c.f32({2, 3}, {1, 2, 3, 4, 5, 6});
  whale_rt_tensor *t = c.make(WHALE_RT_F32, {3, 2}),
                  *s = c.make(WHALE_RT_F32, {2, 2}),
                  *cat = c.make(WHALE_RT_F32, {2, 5}),
                  *r = c.make(WHALE_RT_F32, {6});
  int64_t perm[] = {1, 0};
  ASSERT_EQ(whale_rt_transpose(c.ctx, x, perm, t), WHALE_RT_OK);
  EXPECT_EQ(whale::testing::floatsOf(t, 6),
            (std::vector<float>{1, 4, 2, 5, 3, 6}));
  ASSERT_EQ(whale_rt_slice(c.ctx, x, 1, 1, 3, s), WHALE_RT_OK);
  EXPECT_EQ(whale::testing::floatsOf(s, 4), (std::vector<float>{2, 3, 5, 6}));
  whale_rt_tensor *ins[] = {x, s};
  ASSERT_EQ(whale_rt_concat(c.ctx, 2, ins, 1, cat), WHALE_RT_OK);
  EXPECT_EQ(whale::testing::floatsOf(cat, 10),
            (std::vector<float>{1, 2, 3, 2, 3, 4, 5, 6, 5, 6}));
  ASSERT_EQ(whale_rt_reshape(c.ctx, x, r), WHALE_RT_OK);
  EXPECT_EQ(whale::testing::floatsOf(r, 6), whale::testing::floatsOf(x, 6));
  // Taking the memory: the same elements at the same address in the new
  // shape, no copy; the input is left empty, and a second take of it or a
  // shape of another size is refused.
  {
    whale_rt_tensor *y = c.f32({2, 3}, {1, 2, 3, 4, 5, 6}), *taken = nullptr;
    void *at = whale_rt_tensor_data(y);
    int64_t bad[] = {4};
    EXPECT_EQ(whale_rt_reshape_take(c.ctx, y, 1, bad, &taken),
              WHALE_RT_INVALID_ARGUMENT);
    EXPECT_STREQ(whale_rt_last_error(c.ctx),
                 "reshape: [2, 3] has 6 elements, [4] would have 4");
    EXPECT_EQ(whale_rt_tensor_data(y), at); // as it was
    int64_t flat[] = {3, 2};
    ASSERT_EQ(whale_rt_reshape_take(c.ctx, y, 2, flat, &taken), WHALE_RT_OK);
    EXPECT_EQ(whale_rt_tensor_data(taken), at);
    EXPECT_EQ(whale_rt_tensor_shape(taken)[0], 3);
    EXPECT_EQ(whale::testing::floatsOf(taken, 6),
              (std::vector<float>{1, 2, 3, 4, 5, 6}));
    EXPECT_EQ(whale_rt_tensor_data(y), nullptr);
    whale_rt_tensor *again = nullptr;
    EXPECT_EQ(whale_rt_reshape_take(c.ctx, y, 2, flat, &again),
              WHALE_RT_INVALID_ARGUMENT);
    EXPECT_STREQ(whale_rt_last_error(c.ctx),
                 "reshape_take: the input's memory was taken before");
    whale_rt_tensor_release(c.ctx, y);
    EXPECT_EQ(whale::testing::floatsOf(taken, 6),
              (std::vector<float>{1, 2, 3, 4, 5, 6}));
  }
  EXPECT_EQ(whale_rt_slice(c.ctx, x, 1, 2, 5, s), WHALE_RT_INVALID_ARGUMENT);
  EXPECT_STREQ(whale_rt_last_error(c.ctx),
               "slice: [2, 5) of axis 1 does not fit [2, 3]");
}

/// Attention's `form` flags: causal and sequence-major through the ABI
/// give what the head-major call gives on the permuted operands, and a bit
/// the ABI does not define is an error, not ignored.
TEST(RuntimeCApi, AttentionFormFlags) {
  CApiCtx c;
  // [B=1, T=3, H=2, E=2] and its head-major [1, 2, 3, 2].
  const std::vector<float> seq = {1, 0, 0, 1, 2, 1, 1, 2, 0, 3, 3, 0};
  std::vector<float> heads(12);
  for (int t = 0; t < 3; ++t)
    for (int h = 0; h < 2; ++h)
      for (int e = 0; e < 2; ++e)
        heads[(h * 3 + t) * 2 + e] = seq[(t * 2 + h) * 2 + e];
  whale_rt_tensor *xs = c.f32({1, 3, 2, 2}, seq),
                  *xh = c.f32({1, 2, 3, 2}, heads),
                  *os = c.make(WHALE_RT_F32, {1, 3, 2, 2}),
                  *oh = c.make(WHALE_RT_F32, {1, 2, 3, 2});
  const int32_t causal = WHALE_RT_ATTENTION_CAUSAL;
  ASSERT_EQ(whale_rt_attention(c.ctx, xh, xh, xh, 0.5, causal, oh),
            WHALE_RT_OK);
  ASSERT_EQ(whale_rt_attention(c.ctx, xs, xs, xs, 0.5,
                               causal | WHALE_RT_ATTENTION_SEQUENCE_MAJOR, os),
            WHALE_RT_OK);
  const std::vector<float> gotS = whale::testing::floatsOf(os, 12),
                           gotH = whale::testing::floatsOf(oh, 12);
  for (int t = 0; t < 3; ++t)
    for (int h = 0; h < 2; ++h)
      for (int e = 0; e < 2; ++e)
        EXPECT_NEAR(gotS[(t * 2 + h) * 2 + e], gotH[(h * 3 + t) * 2 + e], 1e-6)
            << t << " " << h << " " << e;
  // Row 0 of a causal attention sees only itself.
  EXPECT_FLOAT_EQ(gotS[0], seq[0]);
  EXPECT_EQ(whale_rt_attention(c.ctx, xs, xs, xs, 0.5, 4, os),
            WHALE_RT_INVALID_ARGUMENT);
  EXPECT_STREQ(whale_rt_last_error(c.ctx),
               "attention: form 4 has flags this runtime does not know");
}

} // namespace

namespace {

TEST(CApiDevices, OpeningByNameAndClearErrorsForGpus) {
  char why[640] = "";
  whale_rt_context *ctx = nullptr;
  ASSERT_EQ(whale_rt_context_open("cpu:3", 2, 0, 1, &ctx, why, sizeof why),
            WHALE_RT_OK);
  whale_rt_context_destroy(ctx);

  EXPECT_EQ(whale_rt_device_check("cuda:x", why, sizeof why),
            WHALE_RT_INVALID_ARGUMENT);
  EXPECT_STREQ(why, "'cuda:x': expected cuda:N, N the GPU's number from 0");
  EXPECT_EQ(whale_rt_context_open("cuda:", 1, 0, 1, &ctx, why, sizeof why),
            WHALE_RT_INVALID_ARGUMENT);
  EXPECT_EQ(ctx, nullptr);

  // Where no driver is (every CI machine), cuda:0 says so and loads
  // nothing; with a driver this is the GPU suite's to test.
  if (void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)) {
    dlclose(driver);
    GTEST_SKIP() << "this machine has an NVIDIA driver";
  }
  EXPECT_EQ(whale_rt_context_open("cuda:0", 1, 0, 1, &ctx, why, sizeof why),
            WHALE_RT_INVALID_ARGUMENT);
  EXPECT_EQ(ctx, nullptr);
  EXPECT_NE(std::string(why).find("'cuda:0': this machine has no NVIDIA "
                                  "driver"),
            std::string::npos)
      << why;
  // The old entry point gives no reason, but no context either.
  EXPECT_EQ(whale_rt_context_create("cuda:0", 1, 0, 1), nullptr);
}

TEST(CApiTrace, APausedTraceRunsOpsUntimedAndMarksTheDriversSteps) {
  // `--trace-every`: the steps between traced ones run as untraced steps
  // do (no op timed, nothing checked), and the driver's span of each says
  // which it was.
  whale::testing::TestRuntime rt;
  std::unique_ptr<whale_rt_comm, void (*)(whale_rt_comm *)> comm{
      whale_rt_comm_create(1, 10.0), whale_rt_comm_destroy};
  EXPECT_EQ(whale_rt_comm_pause_trace(comm.get(), 1),
            WHALE_RT_INVALID_ARGUMENT); // nothing traced yet
  ASSERT_EQ(whale_rt_comm_enable_trace(comm.get()), WHALE_RT_OK);
  const int32_t grid[] = {0};
  ASSERT_EQ(whale_rt_context_bind(rt.ctx, comm.get(), 1, 1, grid, 0, 0),
            WHALE_RT_OK);
  whale_rt_tensor *x = rt.f32({2}, {-1, 2}), *y = rt.f32({2}, {0, 0});
  auto step = [&](const char *op) {
    const int64_t start = whale_rt_now_ns();
    EXPECT_EQ(whale_rt_unary(rt.ctx, WHALE_RT_RELU, x, y), WHALE_RT_OK) << op;
    whale_rt_comm_trace_driver(comm.get(), "step", start,
                               whale_rt_now_ns() - start);
  };
  step("traced");
  ASSERT_EQ(whale_rt_comm_pause_trace(comm.get(), 1), WHALE_RT_OK);
  step("untraced");
  EXPECT_EQ(whale::testing::TestRuntime::data<float>(y)[1], 2.0f);
  ASSERT_EQ(whale_rt_comm_pause_trace(comm.get(), 0), WHALE_RT_OK);
  step("traced again");
  std::string path = whale::testing::tempPath("paused-trace.json");
  ASSERT_EQ(whale_rt_comm_write_trace(comm.get(), path.c_str()), WHALE_RT_OK);
  std::ifstream in(path);
  std::string json((std::istreambuf_iterator<char>(in)),
                   std::istreambuf_iterator<char>());
  auto count = [&](const std::string &what) {
    size_t n = 0;
    for (size_t at = json.find(what); at != std::string::npos;
         at = json.find(what, at + 1))
      ++n;
    return n;
  };
  EXPECT_EQ(count("\"cat\": \"compute\""), 2u) << json;
  EXPECT_EQ(count("\"cat\": \"driver\""), 2u) << json;
  EXPECT_EQ(count("\"cat\": \"untraced\""), 1u) << json;
  std::remove(path.c_str());
}

TEST(CApiDevices, TensorReadWriteAndAmpChecks) {
  whale::testing::TestRuntime rt;
  whale_rt_tensor *t = rt.f32({2, 2}, {1, 2, 3, 4});
  float back[4] = {};
  ASSERT_EQ(whale_rt_tensor_read(rt.ctx, t, back, sizeof back), WHALE_RT_OK);
  EXPECT_EQ(back[3], 4.0f);
  float in[2] = {7, 8};
  ASSERT_EQ(whale_rt_tensor_write(rt.ctx, t, in, sizeof in), WHALE_RT_OK);
  EXPECT_EQ(whale::testing::TestRuntime::data<float>(t)[1], 8.0f);
  EXPECT_EQ(whale::testing::TestRuntime::data<float>(t)[2], 3.0f);
  // Past the tensor's bytes is an error, not a write out of bounds.
  float big[5] = {};
  EXPECT_EQ(whale_rt_tensor_write(rt.ctx, t, big, sizeof big),
            WHALE_RT_INVALID_ARGUMENT);
  EXPECT_EQ(whale_rt_tensor_read(rt.ctx, t, big, sizeof big),
            WHALE_RT_INVALID_ARGUMENT);
  EXPECT_EQ(whale_rt_set_amp(rt.ctx, 7), WHALE_RT_INVALID_ARGUMENT);
  EXPECT_STREQ(whale_rt_last_error(rt.ctx), "set_amp: unknown mode 7");
  EXPECT_EQ(whale_rt_set_amp(rt.ctx, WHALE_RT_AMP_BF16), WHALE_RT_OK);
}

TEST(CApi, LayerNormGradientWithTheResidualsIsTheGradientPlusIt) {
  // whale.layernorm_grad's `plus`: dx = residual + the input's gradient,
  // bit for bit the two calls it replaces; dgamma and dbeta unchanged.
  using whale::testing::randomValues;
  using whale::testing::TestRuntime;
  TestRuntime rt;
  const std::vector<int64_t> s{6, 10}, g{10};
  whale_rt_tensor *x = rt.f32(s, randomValues(60, 1, -2, 2)),
                  *gamma = rt.f32(g, randomValues(10, 2, 0.5f, 1.5f)),
                  *dy = rt.f32(s, randomValues(60, 3)),
                  *res = rt.f32(s, randomValues(60, 4));
  whale_rt_tensor *dx = rt.make(WHALE_RT_F32, s),
                  *sum = rt.make(WHALE_RT_F32, s),
                  *fused = rt.make(WHALE_RT_F32, s);
  whale_rt_tensor *dg[2] = {rt.make(WHALE_RT_F32, g), rt.make(WHALE_RT_F32, g)};
  whale_rt_tensor *db[2] = {rt.make(WHALE_RT_F32, g), rt.make(WHALE_RT_F32, g)};
  ASSERT_EQ(
      whale_rt_layernorm_grad(rt.ctx, x, gamma, 1e-5, dy, dx, dg[0], db[0]),
      WHALE_RT_OK);
  ASSERT_EQ(whale_rt_binary(rt.ctx, WHALE_RT_ADD, res, dx, sum), WHALE_RT_OK);
  ASSERT_EQ(whale_rt_layernorm_grad_residual(rt.ctx, x, gamma, 1e-5, dy, res,
                                             fused, dg[1], db[1]),
            WHALE_RT_OK)
      << whale_rt_last_error(rt.ctx);
  auto bits = [](whale_rt_tensor *t, int64_t n) {
    const float *p = TestRuntime::data<float>(t);
    return std::vector<float>(p, p + n);
  };
  EXPECT_EQ(bits(fused, 60), bits(sum, 60));
  EXPECT_EQ(bits(dg[1], 10), bits(dg[0], 10));
  EXPECT_EQ(bits(db[1], 10), bits(db[0], 10));
  EXPECT_NE(bits(fused, 60), bits(dx, 60));
  // A residual of another shape, or none, is refused.
  whale_rt_tensor *wrong = rt.make(WHALE_RT_F32, {5, 10});
  EXPECT_EQ(whale_rt_layernorm_grad_residual(rt.ctx, x, gamma, 1e-5, dy, wrong,
                                             fused, dg[1], db[1]),
            WHALE_RT_INVALID_ARGUMENT);
  EXPECT_STREQ(whale_rt_last_error(rt.ctx),
               "layernorm_grad: shapes do not fit [6, 10]");
  EXPECT_EQ(whale_rt_layernorm_grad_residual(rt.ctx, x, gamma, 1e-5, dy,
                                             nullptr, fused, dg[1], db[1]),
            WHALE_RT_INVALID_ARGUMENT);
  EXPECT_STREQ(whale_rt_last_error(rt.ctx),
               "layernorm_grad: 'residual' is null");
}

TEST(CApi, RmsNormGradientWithTheResidualIsTheTwoCallsBitForBit) {
  // whale.rms_norm_grad's `plus`: the CPU's fused pass writes dx =
  // residual + the input's gradient, bit for bit the two calls it
  // replaces (no contraction of the sum into the product); dweight
  // unchanged. 70 rows: more than one block of the weight's sums, and a
  // width that is no whole number of the kernel's lanes.
  using whale::testing::randomValues;
  using whale::testing::TestRuntime;
  TestRuntime rt;
  const std::vector<int64_t> s{70, 21}, w{21};
  const int64_t n = 70 * 21;
  whale_rt_tensor *x = rt.f32(s, randomValues(n, 1, -2, 2)),
                  *weight = rt.f32(w, randomValues(21, 2, 0.5f, 1.5f)),
                  *dy = rt.f32(s, randomValues(n, 3)),
                  *res = rt.f32(s, randomValues(n, 4));
  whale_rt_tensor *dx = rt.make(WHALE_RT_F32, s),
                  *sum = rt.make(WHALE_RT_F32, s),
                  *fused = rt.make(WHALE_RT_F32, s);
  whale_rt_tensor *dw[2] = {rt.make(WHALE_RT_F32, w), rt.make(WHALE_RT_F32, w)};
  ASSERT_EQ(whale_rt_rms_norm_grad(rt.ctx, x, weight, 1e-5, dy, dx, dw[0]),
            WHALE_RT_OK);
  ASSERT_EQ(whale_rt_binary(rt.ctx, WHALE_RT_ADD, res, dx, sum), WHALE_RT_OK);
  ASSERT_EQ(whale_rt_rms_norm_grad_residual(rt.ctx, x, weight, 1e-5, dy, res,
                                            fused, dw[1]),
            WHALE_RT_OK)
      << whale_rt_last_error(rt.ctx);
  auto bits = [](whale_rt_tensor *t, int64_t count) {
    const float *p = TestRuntime::data<float>(t);
    return std::vector<float>(p, p + count);
  };
  EXPECT_EQ(bits(fused, n), bits(sum, n));
  EXPECT_EQ(bits(dw[1], 21), bits(dw[0], 21));
  EXPECT_NE(bits(fused, n), bits(dx, n));
  whale_rt_tensor *wrong = rt.make(WHALE_RT_F32, {5, 21});
  EXPECT_EQ(whale_rt_rms_norm_grad_residual(rt.ctx, x, weight, 1e-5, dy, wrong,
                                            fused, dw[1]),
            WHALE_RT_INVALID_ARGUMENT);
  EXPECT_STREQ(whale_rt_last_error(rt.ctx),
               "rms_norm_grad: shapes do not fit [70, 21]");
  EXPECT_EQ(whale_rt_rms_norm_grad_residual(rt.ctx, x, weight, 1e-5, dy,
                                            nullptr, fused, dw[1]),
            WHALE_RT_INVALID_ARGUMENT);
  EXPECT_STREQ(whale_rt_last_error(rt.ctx),
               "rms_norm_grad: 'residual' is null");
}

} // namespace
