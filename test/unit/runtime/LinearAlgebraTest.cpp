//===- LinearAlgebraTest.cpp - matmul forward and backward ----------------===//

#include "GradCheck.h"

using namespace whale::rt;
using namespace whale::rt::cpu;
using namespace whale::rt::testing;

namespace {

struct MatmulCase {
  Shape a, b, out;
  bool ta, tb;
};

void PrintTo(const MatmulCase &c, std::ostream *os) {
  *os << shapeName(c.a) << (c.ta ? "T" : "") << " @ " << shapeName(c.b)
      << (c.tb ? "T" : "");
}

/// out[.., i, j] = sum_k opA[.., i, k] * opB[.., k, j], computed naively.
Vec naiveMatmul(const Vec &a, const Vec &b, const MatmulCase &c) {
  size_t ra = c.a.size(), rb = c.b.size();
  int64_t m = c.ta ? c.a[ra - 1] : c.a[ra - 2];
  int64_t k = c.ta ? c.a[ra - 2] : c.a[ra - 1];
  int64_t n = c.tb ? c.b[rb - 2] : c.b[rb - 1];
  int64_t batch = numElements(c.out) / (m * n);
  Vec out(numElements(c.out));
  for (int64_t p = 0; p < batch; ++p)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t q = 0; q < k; ++q) {
          double av =
              c.ta ? a[p * m * k + q * m + i] : a[p * m * k + i * k + q];
          const double *bb = rb == 2 ? b.data() : b.data() + p * k * n;
          double bv = c.tb ? bb[j * k + q] : bb[q * n + j];
          s += av * bv;
        }
        out[p * m * n + i * n + j] = s;
      }
  return out;
}

class Matmul : public ::testing::TestWithParam<MatmulCase> {};

TEST_P(Matmul, ForwardMatchesNaive) {
  const MatmulCase &c = GetParam();
  Vec a = randomVec(numElements(c.a), -1, 1, 1),
      b = randomVec(numElements(c.b), -1, 1, 2);
  Vec out(numElements(c.out));
  matmul<double>(testDevice(), cview(a, c.a), cview(b, c.b), mview(out, c.out),
                 c.ta, c.tb);
  Vec ref = naiveMatmul(a, b, c);
  for (size_t i = 0; i < out.size(); ++i)
    ASSERT_NEAR(out[i], ref[i], 1e-12) << i;
}

TEST_P(Matmul, GradientsMatchFiniteDifferences) {
  const MatmulCase &c = GetParam();
  gradCheck(
      {randomVec(numElements(c.a), -1, 1, 3),
       randomVec(numElements(c.b), -1, 1, 4)},
      [&](const std::vector<Vec> &in) {
        Vec out(numElements(c.out));
        matmul<double>(testDevice(), cview(in[0], c.a), cview(in[1], c.b),
                       mview(out, c.out), c.ta, c.tb);
        return out;
      },
      [&](const std::vector<Vec> &in, const Vec &dout) {
        Vec da(in[0].size()), db(in[1].size());
        View<double> va = mview(da, c.a), vb = mview(db, c.b);
        matmulBackward<double>(testDevice(), cview(in[0], c.a),
                               cview(in[1], c.b), cview(dout, c.out), &va, &vb,
                               c.ta, c.tb);
        return std::vector<Vec>{da, db};
      });
}

INSTANTIATE_TEST_SUITE_P(
    Cases, Matmul,
    ::testing::Values(
        MatmulCase{{5, 4}, {4, 3}, {5, 3}, false, false},
        MatmulCase{{4, 5}, {4, 3}, {5, 3}, true, false},
        MatmulCase{{5, 4}, {3, 4}, {5, 3}, false, true},
        MatmulCase{{4, 5}, {3, 4}, {5, 3}, true, true},
        // a batched lhs against a shared weight
        MatmulCase{{2, 3, 5, 4}, {4, 3}, {2, 3, 5, 3}, false, false},
        MatmulCase{{2, 4, 5}, {3, 4}, {2, 5, 3}, true, true},
        // attention: both batched, q @ k^T
        MatmulCase{{2, 3, 6, 4}, {2, 3, 6, 4}, {2, 3, 6, 6}, false, true},
        MatmulCase{{2, 6, 4}, {2, 6, 5}, {2, 4, 5}, true, false}),
    [](const ::testing::TestParamInfo<MatmulCase> &info) {
      const MatmulCase &c = info.param;
      return shapeName(c.a) + (c.ta ? "T" : "") + "_" + shapeName(c.b) +
             (c.tb ? "T" : "");
    });

TEST(Gemm, FloatAgreesWithDouble) {
  // The f32 path (sgemm) on a size large enough to split over threads.
  int64_t m = 67, n = 45, k = 33;
  Vec a = randomVec(m * k, -1, 1, 5), b = randomVec(k * n, -1, 1, 6);
  std::vector<float> af(a.begin(), a.end()), bf(b.begin(), b.end()), cf(m * n);
  Vec cd(m * n);
  gemm<float>(testDevice(), false, false, m, n, k, 1.0f, af.data(), k,
              bf.data(), n, 0.0f, cf.data(), n);
  gemm<double>(testDevice(), false, false, m, n, k, 1.0, a.data(), k, b.data(),
               n, 0.0, cd.data(), n);
  for (int64_t i = 0; i < m * n; ++i)
    ASSERT_NEAR(cf[i], cd[i], 1e-5) << i;
}

} // namespace
