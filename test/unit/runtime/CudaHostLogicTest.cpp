//===- CudaHostLogicTest.cpp - the GPU's indexing and GEMMs, on the CPU ---===//
//
// Runs here, without a GPU: the index maps the CUDA device builds
// (IndexMaps.h), the per-thread bodies of its kernels (ElementMath.h), its
// 2D copies and its cuBLAS call plans (GemmPlan.h, through a reference
// column-major GEMM), each against the CPU device on random data. What only
// a GPU can run (launches, block reductions, cuBLAS itself) is covered by
// the gpu-labelled tests.
//
//===----------------------------------------------------------------------===//

#include "../RandomValues.h"
#include "AttentionReference.h"
#include "runtime/cpu/CpuDevice.h"
#include "runtime/cuda/AttentionPlan.h"
#include "runtime/cuda/ElementMath.h"
#include "runtime/cuda/GemmPlan.h"
#include "runtime/cuda/IndexMaps.h"
#include "runtime/cuda/LtGemmPlan.h"
#include "runtime/ops/Bf16.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

using namespace whale::rt;
using namespace whale::rt::cuda;

namespace {

using whale::testing::randomValues;

CpuDevice &device() {
  static CpuDevice dev("cpu:host-logic", CpuDeviceOptions{2, 0});
  return dev;
}

View<const float> cv(const std::vector<float> &v, Shape s) {
  return View<const float>{v.data(), std::move(s)};
}
View<float> mv(std::vector<float> &v, Shape s) {
  return View<float>{v.data(), std::move(s)};
}

void expectClose(const std::vector<float> &got, const std::vector<float> &want,
                 float tolerance, const std::string &what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tolerance * std::max(1.0f, std::fabs(want[i])))
        << what << " at " << i;
}

struct BroadcastCase {
  Shape a, b, out;
};

class GpuBinaryMath : public ::testing::TestWithParam<BroadcastCase> {};

TEST_P(GpuBinaryMath, ForwardAndGradientsMatchTheCpu) {
  const BroadcastCase &c = GetParam();
  std::vector<float> a = randomValues(numElements(c.a), 1, 0.5f, 2.0f);
  std::vector<float> b = randomValues(numElements(c.b), 2, 0.5f, 2.0f);
  std::vector<float> dout = randomValues(numElements(c.out), 3);
  for (int op = 0; op < 4; ++op) {
    auto bop = static_cast<BinaryOp>(op);
    std::vector<float> want(numElements(c.out)), got(want.size());
    ASSERT_TRUE(device().binary(bop, cv(a, c.a), cv(b, c.b), mv(want, c.out)));
    Strided map = broadcastMap(c.out, c.a, &c.b);
    for (int64_t i = 0; i < numElements(c.out); ++i) {
      int64_t oa, ob;
      stridedOffsets(map, i, oa, ob);
      got[i] = applyBinary(op, a[oa], b[ob]);
    }
    expectClose(got, want, 1e-6f, "binary " + std::to_string(op));

    std::vector<float> wantA(a.size()), wantB(b.size());
    View<float> va = mv(wantA, c.a), vb = mv(wantB, c.b);
    ASSERT_TRUE(device().binaryBackward(bop, cv(a, c.a), cv(b, c.b),
                                        cv(dout, c.out), &va, &vb));
    for (int which = 0; which < 2; ++which) {
      const Shape &gs = which ? c.b : c.a;
      std::vector<float> grad(numElements(gs));
      int64_t perPart;
      Walk w = binaryGradientWalk(c.out, c.a, c.b, gs, perPart);
      for (int64_t t = 0; t < numElements(gs); ++t)
        grad[t] = binaryGradientAt(op, which, a.data(), b.data(), dout.data(),
                                   w, t, perPart);
      expectClose(grad, which ? wantB : wantA, 1e-5f,
                  "binary_grad " + std::to_string(op) + " operand " +
                      std::to_string(which));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, GpuBinaryMath,
    ::testing::Values(BroadcastCase{{3, 4}, {3, 4}, {3, 4}},
                      BroadcastCase{{2, 3, 4}, {4}, {2, 3, 4}},
                      BroadcastCase{{2, 1, 4}, {3, 1}, {2, 3, 4}},
                      BroadcastCase{{5}, {2, 5}, {2, 5}},
                      BroadcastCase{{1}, {3, 2}, {3, 2}}));

TEST(GpuElementMath, UnaryAndGradientsMatchTheCpu) {
  Shape s{4, 37};
  std::vector<float> x = randomValues(numElements(s), 4, 0.1f, 3.0f);
  std::vector<float> dy = randomValues(numElements(s), 5);
  for (int op = 0; op <= static_cast<int>(UnaryOp::Sqrt); ++op) {
    auto uop = static_cast<UnaryOp>(op);
    std::vector<float> y(x.size()), got(x.size()), dx(x.size()),
        gotDx(x.size());
    ASSERT_TRUE(device().unary(uop, cv(x, s), mv(y, s)));
    ASSERT_TRUE(
        device().unaryBackward(uop, cv(x, s), cv(y, s), cv(dy, s), mv(dx, s)));
    for (size_t i = 0; i < x.size(); ++i) {
      got[i] = unaryValue(op, x[i]);
      gotDx[i] = unaryGradient(op, x[i], y[i], dy[i]);
    }
    expectClose(got, y, 1e-5f, "unary " + std::to_string(op));
    expectClose(gotDx, dx, 1e-5f, "unary_grad " + std::to_string(op));
  }
}

/// A row's log-sum-exp as rowOnlineLse (CudaKernels.cu) forms it: 256
/// threads each over every 256th value, then merged by xor shuffles within
/// warps and across the 8 warps' results.
float blockOnlineLse(const std::vector<float> &row) {
  const int threads = 256;
  std::vector<OnlineLse> t(threads);
  for (size_t j = 0; j < row.size(); ++j)
    t[j % threads].add(row[j]);
  auto warpMerge = [](std::vector<OnlineLse> lanes) {
    for (int o = 16; o > 0; o >>= 1) {
      std::vector<OnlineLse> next = lanes;
      for (int l = 0; l < 32; ++l)
        next[l].merge(lanes[l ^ o]);
      lanes = next;
    }
    return lanes[0];
  };
  std::vector<OnlineLse> warps(32);
  for (int w = 0; w < threads / 32; ++w)
    warps[w] = warpMerge(
        std::vector<OnlineLse>(t.begin() + 32 * w, t.begin() + 32 * (w + 1)));
  return warpMerge(warps).value();
}

TEST(GpuElementMath, OnlineLogSumExpMatchesTheCpusTwoPasses) {
  CpuDevice &cpu = device();
  auto cpuLse = [&](const std::vector<float> &row) {
    // The CPU's cross entropy of label 0 plus that logit: its lse.
    int32_t label = 0;
    float loss = 0;
    int64_t n = static_cast<int64_t>(row.size());
    EXPECT_TRUE(cpu.crossEntropy({row.data(), {1, n}},
                                 IndexView{&label, {1}, false}, {&loss, {1}}));
    return loss + row[0];
  };
  for (int64_t n : {1, 7, 256, 1000, 50304}) {
    for (float spread : {1.0f, 30.0f, 1e4f}) {
      std::vector<float> row = randomValues(n, 40 + n, -spread, spread);
      double m = *std::max_element(row.begin(), row.end()), sum = 0;
      for (float v : row)
        sum += std::exp(double(v) - m);
      float got = blockOnlineLse(row);
      EXPECT_NEAR(got, m + std::log(sum), 2e-6 * std::max(1.0, std::fabs(m)))
          << n << " " << spread;
      EXPECT_NEAR(got, cpuLse(row), 2e-6 * std::max(1.0, std::fabs(m)));
    }
  }
  // -inf (a masked logit) adds nothing, wherever it stands.
  std::vector<float> masked = {-INFINITY, 1.0f, -INFINITY, 2.0f};
  EXPECT_NEAR(blockOnlineLse(masked), std::log(std::exp(1.0) + std::exp(2.0)),
              1e-6);
  // Where the CPU's two passes give NaN, so does this: a NaN or +inf in
  // the row, or nothing above -inf.
  for (std::vector<float> bad :
       {std::vector<float>{1.0f, NAN, 3.0f}, std::vector<float>{NAN},
        std::vector<float>{1.0f, INFINITY}, std::vector<float>{INFINITY, 1.0f},
        std::vector<float>{-INFINITY, -INFINITY}}) {
    EXPECT_TRUE(std::isnan(blockOnlineLse(bad)));
    EXPECT_TRUE(std::isnan(cpuLse(bad)));
  }
}

TEST(GpuElementMath, CausalMaskMatchesTheCpu) {
  for (Shape s : {Shape{2, 5, 5}, Shape{3, 2, 6}}) {
    std::vector<float> x = randomValues(numElements(s), 6), want(x.size());
    ASSERT_TRUE(device().causalMask(cv(x, s), mv(want, s)));
    for (int64_t i = 0; i < numElements(s); ++i) {
      bool masked = causallyMasked(i, s[1], s[2]);
      EXPECT_EQ(masked, std::isinf(want[i])) << shapeString(s) << " " << i;
      if (!masked) {
        EXPECT_EQ(want[i], x[i]);
      }
    }
  }
}

struct ReduceCase {
  Shape x;
  std::vector<int64_t> axes;
};

class GpuReduceMath : public ::testing::TestWithParam<ReduceCase> {};

TEST_P(GpuReduceMath, ForwardAndGradientMatchTheCpu) {
  const ReduceCase &c = GetParam();
  std::vector<float> x = randomValues(numElements(c.x), 7);
  for (int op = 0; op < 3; ++op) {
    auto rop = static_cast<ReduceOp>(op);
    int64_t kept, count;
    Walk w = reduceWalk(c.x, c.axes, kept, count);
    std::vector<float> want(kept), got(kept);
    ASSERT_TRUE(device().reduce(rop, cv(x, c.x), c.axes, mv(want, {kept})));
    for (int64_t t = 0; t < kept; ++t)
      got[t] = reduceAt(op, x.data(), w, t, count);
    expectClose(got, want, 1e-5f, "reduce " + std::to_string(op));

    std::vector<float> dout = randomValues(kept, 8), wantDx(x.size()),
                       gotDx(x.size(), 12345.0f);
    ASSERT_TRUE(device().reduceBackward(rop, cv(x, c.x), c.axes,
                                        cv(dout, {kept}), mv(wantDx, c.x)));
    for (int64_t t = 0; t < kept; ++t)
      reduceGradientAt(op, x.data(), dout.data(), gotDx.data(), w, t, count);
    expectClose(gotDx, wantDx, 1e-6f, "reduce_grad " + std::to_string(op));
  }
}

INSTANTIATE_TEST_SUITE_P(Axes, GpuReduceMath,
                         ::testing::Values(ReduceCase{{4, 6}, {1}},
                                           ReduceCase{{4, 6}, {0}},
                                           ReduceCase{{2, 3, 4}, {0, 2}},
                                           ReduceCase{{2, 3, 4}, {0, 1, 2}},
                                           ReduceCase{{3, 1, 5}, {1}}));

/// A coordinate comes out the same in 32 bits (indices under 2^32) as in
/// 64, and sizes or indices past 2^32 take the 64-bit path.
TEST(GpuIndexMaps, CoordinatesIn32And64Bits) {
  const int64_t big = int64_t(1) << 33;
  struct Case {
    int64_t x, size;
  };
  for (Case c : {Case{0, 7}, Case{6, 7}, Case{12345, 7}, Case{0xffffffff, 3},
                 Case{0xffffffff, 0xffffffff}, Case{5, big + 3},
                 Case{big + 11, 7}, Case{big + 11, big}, Case{3 * big, big}}) {
    int64_t x = c.x;
    const int64_t coordinate = takeCoordinate(x, c.size);
    EXPECT_EQ(coordinate, c.x % c.size) << c.x << " over " << c.size;
    EXPECT_EQ(x, c.x / c.size) << c.x << " over " << c.size;
  }
}

TEST(GpuIndexMaps, TransposeAndBroadcastGathersMatchTheCpu) {
  Shape s{2, 3, 4};
  std::vector<float> x = randomValues(numElements(s), 9);
  for (std::vector<int64_t> perm :
       {std::vector<int64_t>{2, 0, 1}, std::vector<int64_t>{0, 2, 1},
        std::vector<int64_t>{1, 0, 2}}) {
    Shape out{s[perm[0]], s[perm[1]], s[perm[2]]};
    std::vector<float> want(x.size()), got(x.size());
    ASSERT_TRUE(device().transpose(cv(x, s), perm, mv(want, out)));
    Strided m = transposeMap(s, perm);
    for (int64_t i = 0; i < numElements(out); ++i) {
      int64_t o, unused;
      stridedOffsets(m, i, o, unused);
      got[i] = x[o];
    }
    expectClose(got, want, 0, "transpose");
  }
  Shape small{3, 1}, big{2, 3, 5};
  std::vector<float> y = randomValues(3, 10), want(numElements(big)),
                     got(want.size());
  ASSERT_TRUE(device().broadcastTo(cv(y, small), mv(want, big)));
  Strided m = broadcastMap(big, small);
  for (int64_t i = 0; i < numElements(big); ++i) {
    int64_t o, unused;
    stridedOffsets(m, i, o, unused);
    got[i] = y[o];
  }
  expectClose(got, want, 0, "broadcast");
}

/// cudaMemcpy2D's meaning, on host buffers.
void copy2D(char *dst, const char *src, const Copy2D &c) {
  for (int64_t r = 0; r < c.rows; ++r)
    std::memcpy(dst + c.dstOffset + r * c.dstPitch,
                src + c.srcOffset + r * c.srcPitch, c.width);
}

TEST(GpuIndexMaps, SliceConcatAndSliceGradientAsTwoDCopies) {
  Shape s{3, 7, 2};
  std::vector<float> x = randomValues(numElements(s), 11);
  Shape part{3, 3, 2};
  std::vector<float> want(numElements(part)), got(want.size());
  ASSERT_TRUE(device().slice(x.data(), s, 4, 1, 2, 5, want.data()));
  copy2D(reinterpret_cast<char *>(got.data()),
         reinterpret_cast<const char *>(x.data()),
         rangeCopy(s, 1, 2, 3, 4, /*toPart=*/true));
  expectClose(got, want, 0, "slice");

  std::vector<float> dx(x.size()), gotDx(x.size(), 0.0f);
  ASSERT_TRUE(device().sliceBackward(cv(want, part), 1, 2, mv(dx, s)));
  copy2D(reinterpret_cast<char *>(gotDx.data()),
         reinterpret_cast<const char *>(want.data()),
         rangeCopy(s, 1, 2, 3, 4, /*toPart=*/false));
  expectClose(gotDx, dx, 0, "slice_grad");

  Shape a{3, 2, 2}, b{3, 5, 2};
  std::vector<float> va = randomValues(numElements(a), 12),
                     vb = randomValues(numElements(b), 13);
  std::vector<float> joined(numElements(s)), gotJoined(joined.size());
  ASSERT_TRUE(device().concat({cv(va, a), cv(vb, b)}, 1, mv(joined, s)));
  copy2D(reinterpret_cast<char *>(gotJoined.data()),
         reinterpret_cast<const char *>(va.data()),
         rangeCopy(s, 1, 0, 2, 4, false));
  copy2D(reinterpret_cast<char *>(gotJoined.data()),
         reinterpret_cast<const char *>(vb.data()),
         rangeCopy(s, 1, 2, 5, 4, false));
  expectClose(gotJoined, joined, 0, "concat");
}

TEST(GpuElementMath, OptimizerStepsMatchTheCpu) {
  Shape s{129};
  std::vector<float> g = randomValues(129, 14);
  std::vector<float> p = randomValues(129, 15), q = p;
  std::vector<float> vel(129, 0), vel2(129, 0);
  for (int step = 0; step < 3; ++step) {
    ASSERT_TRUE(device().sgdStep(mv(p, s), cv(g, s), vel.data(),
                                 SgdParams{0.1, 0.9, 0.01}));
    for (int64_t i = 0; i < 129; ++i)
      sgdAt(q.data(), g.data(), vel2.data(), i, 0.1f, 0.9f, 0.01f);
  }
  expectClose(q, p, 1e-6f, "sgd");

  std::vector<float> m(129, 0), v(129, 0), m2(129, 0), v2(129, 0);
  q = p;
  for (int64_t step = 1; step <= 3; ++step) {
    AdamParams a{step, 1e-2, 0.9, 0.999, 1e-8, 0.1, true};
    ASSERT_TRUE(device().adamStep(mv(p, s), cv(g, s), m.data(), v.data(), a));
    float c1 = static_cast<float>(1 - std::pow(0.9, step));
    float c2 = static_cast<float>(1 - std::pow(0.999, step));
    for (int64_t i = 0; i < 129; ++i)
      adamAt(q.data(), g.data(), m2.data(), v2.data(), i, 1e-2f, 0.9f, 0.999f,
             1e-8f, 0.1f, true, c1, c2);
  }
  expectClose(q, p, 1e-6f, "adamw");
}

/// cublasSgemmStridedBatched's meaning (column-major), on host buffers.
void referenceGemm(const GemmCall &g, const float *first, const float *second,
                   float *out) {
  for (int64_t b = 0; b < g.batch; ++b) {
    const float *x = first + g.offFirst + b * g.strideFirst;
    const float *y = second + g.offSecond + b * g.strideSecond;
    float *c = out + g.offOut + b * g.strideOut;
    for (int64_t i = 0; i < g.m; ++i)
      for (int64_t j = 0; j < g.n; ++j) {
        double sum = 0;
        for (int64_t k = 0; k < g.k; ++k) {
          float xv = g.transFirst ? x[k + i * g.ldFirst] : x[i + k * g.ldFirst];
          float yv =
              g.transSecond ? y[j + k * g.ldSecond] : y[k + j * g.ldSecond];
          sum += static_cast<double>(xv) * yv;
        }
        float &o = c[i + j * g.ldOut];
        o = static_cast<float>(sum + (g.beta != 0 ? g.beta * o : 0.0f));
      }
  }
}

struct MatmulCase {
  Shape a, b;
  bool ta, tb;
};

class GpuGemmPlan : public ::testing::TestWithParam<MatmulCase> {};

TEST_P(GpuGemmPlan, ForwardAndGradientsMatchTheCpu) {
  const MatmulCase &c = GetParam();
  MatmulDims d = matmulDims(c.a, c.b, c.ta, c.tb);
  Shape out(c.a.begin(), c.a.end() - 2);
  out.push_back(d.m);
  out.push_back(d.n);
  std::vector<float> a = randomValues(numElements(c.a), 16),
                     b = randomValues(numElements(c.b), 17),
                     dout = randomValues(numElements(out), 18);
  std::vector<float> want(numElements(out)), got(want.size());
  ASSERT_TRUE(
      device().matmul(cv(a, c.a), cv(b, c.b), mv(want, out), c.ta, c.tb));
  std::vector<float> wantA(a.size()), wantB(b.size());
  View<float> va = mv(wantA, c.a), vb = mv(wantB, c.b);
  ASSERT_TRUE(device().matmulBackward(cv(a, c.a), cv(b, c.b), cv(dout, out),
                                      &va, &vb, c.ta, c.tb));

  std::vector<float> gotA(a.size(), 7.0f), gotB(b.size(), 7.0f);
  auto run = [&](const std::vector<GemmCall> &calls, const float *cBuffer,
                 float *result) {
    for (const GemmCall &g : calls) {
      auto buffer = [&](Operand o) -> float * {
        switch (o) {
        case Operand::A:
          return a.data();
        case Operand::B:
          return b.data();
        case Operand::C:
          return const_cast<float *>(cBuffer);
        case Operand::DA:
          return gotA.data();
        case Operand::DB:
          return gotB.data();
        }
        return nullptr;
      };
      referenceGemm(g, buffer(g.first), buffer(g.second),
                    g.out == Operand::C ? result : buffer(g.out));
    }
  };
  run(planMatmul(d, c.ta, c.tb), nullptr, got.data());
  expectClose(got, want, 1e-5f, "matmul");
  run(planMatmulBackward(d, c.ta, c.tb, true, true), dout.data(), nullptr);
  expectClose(gotA, wantA, 1e-5f, "matmul_grad da");
  expectClose(gotB, wantB, 1e-5f, "matmul_grad db");
}

/// Element (i, j) of matrix `b` of a cuBLASLt layout, column-major.
float at(const LtMatrix &l, const float *data, int64_t b, int64_t i,
         int64_t j) {
  EXPECT_LT(i, l.rows);
  EXPECT_LT(j, l.cols);
  EXPECT_LE(l.rows, l.ld);
  return data[b * l.stride + i + j * l.ld];
}

/// cublasLtMatmul's meaning, read through the layouts LtGemmPlan.h gives:
/// D = op(A) op(B) + beta C, every matrix as its layout describes it.
void referenceLtMatmul(const GemmCall &g, const float *first,
                       const float *second, float *out) {
  const LtLayouts l = ltLayouts(g);
  first += g.offFirst;
  second += g.offSecond;
  out += g.offOut;
  ASSERT_EQ(l.out.rows, g.m);
  ASSERT_EQ(l.out.cols, g.n);
  for (int64_t b = 0; b < g.batch; ++b)
    for (int64_t i = 0; i < l.out.rows; ++i)
      for (int64_t j = 0; j < l.out.cols; ++j) {
        double sum = 0;
        for (int64_t k = 0; k < g.k; ++k) {
          float x = g.transFirst ? at(l.first, first, b, k, i)
                                 : at(l.first, first, b, i, k);
          float y = g.transSecond ? at(l.second, second, b, j, k)
                                  : at(l.second, second, b, k, j);
          sum += static_cast<double>(x) * y;
        }
        float &o = out[b * l.out.stride + i + j * l.out.ld];
        o = static_cast<float>(sum + (g.beta != 0 ? g.beta * o : 0.0f));
      }
}

// Every call the plans make, described as cuBLASLt's layouts, computes what
// the cuBLAS call computes; the calls that share an operand across a batch
// stay with cuBLAS.
TEST_P(GpuGemmPlan, CublasLtLayoutsDescribeTheSameProducts) {
  const MatmulCase &c = GetParam();
  MatmulDims d = matmulDims(c.a, c.b, c.ta, c.tb);
  const int64_t outSize = numElements(c.a) / (d.m * d.k) * d.m * d.n;
  std::vector<float> a = randomValues(numElements(c.a), 26),
                     b = randomValues(numElements(c.b), 27),
                     dc = randomValues(outSize, 28);
  std::vector<GemmCall> calls = planMatmul(d, c.ta, c.tb);
  for (const GemmCall &g : planMatmulBackward(d, c.ta, c.tb, true, true))
    calls.push_back(g);
  std::vector<float> viaBlas[5], viaLt[5];
  for (int o = 0; o < 5; ++o) {
    size_t n = o == 0 || o == 3   ? a.size()
               : o == 1 || o == 4 ? b.size()
                                  : dc.size();
    viaBlas[o].assign(n, 3.0f);
    viaLt[o].assign(n, 3.0f);
  }
  auto input = [&](Operand o) -> const float * {
    return o == Operand::A ? a.data() : o == Operand::B ? b.data() : dc.data();
  };
  int lt = 0;
  for (const GemmCall &g : calls) {
    // The forward's result goes to C's slot here: its own buffer.
    int slot = static_cast<int>(g.out);
    referenceGemm(g, input(g.first), input(g.second), viaBlas[slot].data());
    if (!ltRuns(g)) {
      EXPECT_TRUE(g.batch > 1 && (g.strideFirst == 0 || g.strideSecond == 0));
      continue;
    }
    ++lt;
    referenceLtMatmul(g, input(g.first), input(g.second), viaLt[slot].data());
    EXPECT_EQ(viaLt[slot], viaBlas[slot]) << "call to operand " << slot;
  }
  EXPECT_GT(lt, 0);
  // A linear layer's weight (shared, its input not transposed): the batch's
  // rows are one matrix in the forward and both gradients, one call each,
  // so every one runs through cuBLASLt and can take an epilogue.
  if (d.shared && !c.ta)
    for (const GemmCall &g : calls) {
      EXPECT_EQ(g.batch, 1);
      EXPECT_TRUE(ltRuns(g));
    }
}

TEST(GpuLtGemmPlan, KeysTellShapesTypesAndAlignmentsApart) {
  MatmulDims d = matmulDims({8, 16}, {16, 32}, false, false);
  GemmCall g = planMatmul(d, false, false)[0];
  const uintptr_t aligned = 4096;
  LtKey key = ltKey(g, true, false, false, aligned, aligned, aligned);
  EXPECT_EQ(key, ltKey(g, true, false, false, aligned + 32, aligned, aligned));
  EXPECT_EQ(LtKeyHash()(key),
            LtKeyHash()(
                ltKey(g, true, false, false, aligned + 32, aligned, aligned)));
  // An operand offset by one bf16 element is 2-byte aligned.
  EXPECT_EQ(
      ltKey(g, true, false, false, aligned + 2, aligned, aligned).alignFirst,
      2);
  EXPECT_FALSE(key ==
               ltKey(g, true, false, false, aligned + 2, aligned, aligned));
  EXPECT_FALSE(key == ltKey(g, true, true, false, aligned, aligned, aligned));
  EXPECT_FALSE(key == ltKey(g, false, false, false, aligned, aligned, aligned));
  // TF32 is an fp32 setting: bf16 inputs ignore it.
  EXPECT_EQ(key, ltKey(g, true, false, true, aligned, aligned, aligned));
  EXPECT_FALSE(ltKey(g, false, false, true, aligned, aligned, aligned) ==
               ltKey(g, false, false, false, aligned, aligned, aligned));
  GemmCall accumulating = g;
  accumulating.beta = 1;
  EXPECT_FALSE(key == ltKey(accumulating, true, false, false, aligned, aligned,
                            aligned));
  // An epilogue is another algorithm.
  EXPECT_FALSE(key == ltKey(g, true, false, false, aligned, aligned, aligned,
                            LtEpilogue::Bias));
  EXPECT_FALSE(ltKey(g, true, false, false, aligned, aligned, aligned,
                     LtEpilogue::GeluBias) == ltKey(g, true, false, false,
                                                    aligned, aligned, aligned,
                                                    LtEpilogue::GeluAuxBias));
  EXPECT_FALSE(ltKey(g, true, false, false, aligned, aligned, aligned,
                     LtEpilogue::BgradA) == ltKey(g, true, false, false,
                                                  aligned, aligned, aligned,
                                                  LtEpilogue::BgradB));
  GemmCall wider = g;
  wider.n = 64;
  EXPECT_FALSE(key ==
               ltKey(wider, true, false, false, aligned, aligned, aligned));
  EXPECT_EQ(ltAlignment(0), 16);
  EXPECT_EQ(ltAlignment(4), 4);
  EXPECT_EQ(ltAlignment(24), 8);
  EXPECT_EQ(ltAlignment(1), 1);
}

// A linear layer's weight gradient sums its output gradient over the rows
// into the bias's gradient in the epilogue: the epilogue named for the
// operand that gradient is (cuBLASLt's A or B), read through its layout,
// sums to what the CPU's bias gradient is, one value per output column.
TEST(GpuLtGemmPlan, BiasGradientEpiloguesSumTheOutputGradientsRows) {
  const int64_t batch = 2, m = 3, k = 4, n = 5;
  for (bool transW : {false, true}) {
    const Shape xs{batch, m, k}, dys{batch, m, n};
    const Shape ws = transW ? Shape{n, k} : Shape{k, n};
    MatmulDims d = matmulDims(xs, ws, false, transW);
    std::vector<GemmCall> calls =
        planMatmulBackward(d, false, transW, false, true);
    ASSERT_EQ(calls.size(), 1u);
    const GemmCall &g = calls[0];
    const LtEpilogue e = ltBiasGradient(g, Operand::C);
    ASSERT_NE(e, LtEpilogue::None) << "transpose " << transW;
    EXPECT_TRUE(ltUsesBias(e));
    EXPECT_FALSE(ltUsesAux(e));

    std::vector<float> x = randomValues(numElements(xs), 31),
                       dy = randomValues(numElements(dys), 32);
    std::vector<float> want(n);
    View<float> vw = mv(want, {n});
    ASSERT_TRUE(device().binaryBackward(
        BinaryOp::Add, cv(dy, dys), cv(want, {n}), cv(dy, dys), nullptr, &vw));
    const LtLayouts l = ltLayouts(g);
    const float *first = g.first == Operand::C ? dy.data() : x.data();
    const float *second = g.second == Operand::C ? dy.data() : x.data();
    std::vector<float> got;
    if (e == LtEpilogue::BgradA) // one value per row of the result
      for (int64_t i = 0; i < g.m; ++i) {
        double sum = 0;
        for (int64_t kk = 0; kk < g.k; ++kk)
          sum += g.transFirst ? at(l.first, first, 0, kk, i)
                              : at(l.first, first, 0, i, kk);
        got.push_back(static_cast<float>(sum));
      }
    else // one value per column of the result
      for (int64_t j = 0; j < g.n; ++j) {
        double sum = 0;
        for (int64_t kk = 0; kk < g.k; ++kk)
          sum += g.transSecond ? at(l.second, second, 0, j, kk)
                               : at(l.second, second, 0, kk, j);
        got.push_back(static_cast<float>(sum));
      }
    expectClose(got, want, 1e-5f, "bias gradient");
  }
  // An accumulating call, or an operand the call does not read: none.
  GemmCall g = planMatmulBackward(matmulDims({3, 4}, {4, 5}, false, false),
                                  false, false, false, true)[0];
  EXPECT_EQ(ltBiasGradient(g, Operand::B), LtEpilogue::None);
  g.beta = 1;
  EXPECT_EQ(ltBiasGradient(g, Operand::C), LtEpilogue::None);
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, GpuGemmPlan,
    ::testing::Values(MatmulCase{{3, 4}, {4, 5}, false, false},
                      MatmulCase{{4, 3}, {4, 5}, true, false},
                      MatmulCase{{3, 4}, {5, 4}, false, true},
                      MatmulCase{{4, 3}, {5, 4}, true, true},
                      MatmulCase{{2, 3, 4}, {4, 5}, false, false},
                      MatmulCase{{2, 3, 4}, {5, 4}, false, true},
                      MatmulCase{{2, 4, 3}, {4, 5}, true, false},
                      MatmulCase{{2, 4, 3}, {5, 4}, true, true},
                      MatmulCase{{2, 3, 4}, {2, 4, 5}, false, false},
                      MatmulCase{{2, 4, 3}, {2, 5, 4}, true, true},
                      MatmulCase{{2, 2, 3, 4}, {2, 2, 5, 4}, false, true}));

} // namespace

namespace {

/// One of AttentionPlan.h's products, C = op(A) op(B), on host buffers.
void product(const GemmCall &g, const float *a, const float *b, float *c) {
  referenceGemm(g, g.first == Operand::A ? a : b,
                g.second == Operand::A ? a : b, c);
}

/// The softmax kernel's passes over one chunk's scores, a row at a time.
void softmaxRows(const AttentionDims &d, float *scores, int64_t rows) {
  for (int64_t row = 0; row < rows; ++row) {
    float *s = scores + row * d.tk;
    float mx = -INFINITY, total = 0;
    for (int64_t j = 0; j < d.tk; ++j)
      mx = std::fmax(mx, s[j] = visibleScore(d, row % d.t, j, s[j]));
    for (int64_t j = 0; j < d.tk; ++j)
      total += s[j] = unnormalized(s[j], mx);
    for (int64_t j = 0; j < d.tk; ++j)
      s[j] *= total > 0 ? 1.0f / total : 0.0f;
  }
}

/// The GPU's attention as CudaDevice runs it (AttentionPlan.h): chunks of
/// heads, GEMMs through the reference, the row kernels' passes a row at a
/// time; under amp every product's operands rounded to bf16 where the GPU
/// rounds them. Against the CPU device, forward and backward, with and
/// without the causal mask and amp, in chunks that do and do not divide
/// the heads.
TEST(GpuAttentionPlan, ChunkedGemmsAndRowStepsMatchTheCpu) {
  for (bool amp : {false, true})
    for (bool causal : {false, true})
      for (int64_t maxScores : {int64_t(1) << 20, int64_t(2 * 37 * 37)}) {
        AttentionDims d;
        d.heads = 3;
        d.t = d.tk = 37;
        d.e = 16;
        d.scale = 0.25f;
        d.causal = causal;
        const std::string what = std::string(amp ? "amp " : "") +
                                 (causal ? "causal " : "") + "in chunks of " +
                                 std::to_string(headsPerChunk(d, maxScores));
        const Shape qs{d.heads, d.t, d.e}, ks{d.heads, d.tk, d.e};
        std::vector<float> q = randomValues(numElements(qs), 21);
        std::vector<float> k = randomValues(numElements(ks), 22);
        std::vector<float> v = randomValues(numElements(ks), 23);
        std::vector<float> dout = randomValues(numElements(qs), 24);
        device().setMatmulPrecision(amp ? MatmulPrecision::BF16
                                        : MatmulPrecision::F32);
        std::vector<float> want(q.size());
        ASSERT_TRUE(device().attention(cv(q, qs), cv(k, ks), cv(v, ks), d.scale,
                                       AttentionForm{causal}, mv(want, qs)));
        std::vector<float> wq(q.size()), wk(k.size()), wv(v.size());
        ASSERT_TRUE(device().attentionBackward(
            cv(q, qs), cv(k, ks), cv(v, ks), cv(want, qs), cv(dout, qs),
            d.scale, AttentionForm{causal}, mv(wq, qs), mv(wk, ks),
            mv(wv, ks)));
        device().setMatmulPrecision(MatmulPrecision::F32);

        const std::vector<float> qm = whale::testing::roundedOperand(q, amp),
                                 km = whale::testing::roundedOperand(k, amp),
                                 vm = whale::testing::roundedOperand(v, amp),
                                 dom =
                                     whale::testing::roundedOperand(dout, amp);
        const int64_t chunk = headsPerChunk(d, maxScores);
        std::vector<float> out(q.size()), dq(q.size()), dk(k.size()),
            dv(v.size()), p(chunk * d.t * d.tk), ds(p.size());
        for (int64_t h = 0; h < d.heads; h += chunk) {
          const int64_t n = std::min(chunk, d.heads - h);
          const int64_t qAt = h * d.t * d.e, kAt = h * d.tk * d.e;
          product(scoresGemm(d, n), &qm[qAt], &km[kAt], p.data());
          softmaxRows(d, p.data(), n * d.t);
          const std::vector<float> pm = whale::testing::roundedOperand(p, amp);
          product(outputGemm(d, n), pm.data(), &vm[kAt], &out[qAt]);
          product(valueGradGemm(d, n), pm.data(), &dom[qAt], &dv[kAt]);
          product(probabilityGradGemm(d, n), &dom[qAt], &vm[kAt], ds.data());
          for (int64_t row = 0; row < n * d.t; ++row) {
            float rowD = 0;
            for (int64_t x = 0; x < d.e; ++x)
              rowD += dout[qAt + row * d.e + x] * want[qAt + row * d.e + x];
            for (int64_t j = 0; j < d.tk; ++j) {
              float &g = ds[row * d.tk + j];
              g = scoreGradient(d, p[row * d.tk + j], g, rowD);
            }
          }
          const std::vector<float> dsm =
              whale::testing::roundedOperand(ds, amp);
          product(queryGradGemm(d, n), dsm.data(), &km[kAt], &dq[qAt]);
          product(keyGradGemm(d, n), dsm.data(), &qm[qAt], &dk[kAt]);
        }
        expectClose(out, want, 1e-5f, what + " forward");
        expectClose(dq, wq, 1e-4f, what + " dq");
        expectClose(dk, wk, 1e-4f, what + " dk");
        expectClose(dv, wv, 1e-4f, what + " dv");
      }
}

} // namespace
