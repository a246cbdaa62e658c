//===- FlashPlanTest.cpp - flash attention's tiling, on the CPU ----------===//
//
// The tiled algorithm of FlashAttention.cu, walked here block by block
// through FlashPlan.h's functions (the grid's order, the key tiles a query
// tile visits, the query tiles a key tile is seen by, which tiles mask, the
// online softmax in base 2, the log-sum-exp the backward recomputes P
// from), with the products in plain loops. Against the CPU device's
// attention on random data: in fp32 at the contract's tolerance; under amp
// with the operands and P rounded to bf16 where the kernels round them.
// The fragment loads and the mma instructions themselves only a GPU runs
// (the gpu-labelled tests).
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/FlashPlan.h"
#include "AttentionReference.h"
#include "runtime/ops/Bf16.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

using namespace whale::rt;
using namespace whale::rt::cuda;

namespace {

using whale::testing::expectAllClose;

float rounded(float x, bool amp) { return amp ? roundToBf16(x) : x; }

float dot(const float *a, const float *b, int64_t n) {
  float s = 0;
  for (int64_t x = 0; x < n; ++x)
    s += a[x] * b[x];
  return s;
}

/// A (query tile, key tile) pair's scaled base-2 scores, masked only where
/// tileNeedsMask says (the kernel's fast path does not test).
void tileScores(const AttentionDims &d, const FlashTiles &f, const float *q,
                const float *k, int64_t qt, int64_t kt, std::vector<float> &s) {
  const bool mask = tileNeedsMask(d, f, qt, kt);
  s.assign(size_t(f.rows) * f.keys, -INFINITY);
  for (int64_t r = 0; r < f.rows; ++r) {
    const int64_t i = qt * f.rows + r;
    if (i >= d.t)
      continue;
    for (int64_t c = 0; c < f.keys; ++c) {
      const int64_t j = kt * f.keys + c;
      if (j >= d.tk) {
        EXPECT_TRUE(mask) << "tile " << qt << "," << kt << " reads past tk";
        continue;
      }
      const float raw = dot(q + i * d.e, k + j * d.e, d.e);
      s[r * f.keys + c] = tileScore(d, mask, i, j, raw);
      if (!mask) {
        EXPECT_TRUE(!d.causal || j <= i) << "unmasked tile hides key " << j;
      }
    }
  }
}

/// The forward over one head: blocks in the grid's order, each streaming
/// its key tiles; out and the base-2 log-sum-exp per row.
void flashForward(const AttentionDims &d, const FlashTiles &f, bool amp,
                  const float *q, const float *k, const float *v, float *out,
                  float *lse) {
  std::vector<float> s;
  const int64_t blocks = tileCount(d.t, f.rows);
  for (int64_t x = 0; x < blocks; ++x) {
    const int64_t qt = queryTileOfBlock(d, f, x);
    std::vector<float> rowMax(f.rows, -INFINITY), rowSum(f.rows, 0),
        acc(size_t(f.rows) * d.e, 0);
    for (int64_t kt = 0; kt < keyTilesEnd(d, f, qt); ++kt) {
      tileScores(d, f, q, k, qt, kt, s);
      for (int64_t r = 0; r < f.rows; ++r) {
        float now = rowMax[r];
        for (int64_t c = 0; c < f.keys; ++c)
          now = flashMax(now, s[r * f.keys + c]);
        const float alpha = flashRescale(rowMax[r], now);
        rowMax[r] = now;
        rowSum[r] *= alpha;
        for (int64_t x2 = 0; x2 < d.e; ++x2)
          acc[r * d.e + x2] *= alpha;
        for (int64_t c = 0; c < f.keys; ++c) {
          const float p = flashWeight(s[r * f.keys + c], now);
          rowSum[r] += p;
          const int64_t j = kt * f.keys + c;
          if (p == 0 || j >= d.tk)
            continue;
          const float pm = rounded(p, amp); // P enters the mma as bf16
          for (int64_t x2 = 0; x2 < d.e; ++x2)
            acc[r * d.e + x2] += pm * v[j * d.e + x2];
        }
      }
    }
    for (int64_t r = 0; r < f.rows; ++r) {
      const int64_t i = qt * f.rows + r;
      if (i >= d.t)
        continue;
      const float inv = flashInverseSum(rowSum[r]);
      for (int64_t x2 = 0; x2 < d.e; ++x2)
        out[i * d.e + x2] = acc[r * d.e + x2] * inv;
      lse[i] = flashLse(rowMax[r], rowSum[r]);
    }
  }
}

/// The backward over one head: a block per key tile, walking the query
/// tiles that see it; dq summed over blocks as the kernel's atomic adds.
/// q, k, v and do16 as the products read them (bf16 under amp); out and
/// dout as held (D = dO . O is taken in fp32).
void flashBackward(const AttentionDims &d, const FlashTiles &f, bool amp,
                   const float *q, const float *k, const float *v,
                   const float *out, const float *dout, const float *lse,
                   const float *do16, float *dq, float *dk, float *dv) {
  std::vector<float> s, rowD(d.t);
  for (int64_t i = 0; i < d.t; ++i)
    rowD[i] = dot(dout + i * d.e, out + i * d.e, d.e); // fp32, as the kernel
  const int64_t qTiles = tileCount(d.t, f.rows);
  for (int64_t kt = 0; kt < tileCount(d.tk, f.keys); ++kt)
    for (int64_t qt = queryTilesBegin(d, f, kt); qt < qTiles; ++qt) {
      if (kt >= keyTilesEnd(d, f, qt)) {
        ADD_FAILURE() << "query tile " << qt << " never sees key tile " << kt;
        continue;
      }
      tileScores(d, f, q, k, qt, kt, s);
      for (int64_t r = 0; r < f.rows; ++r) {
        const int64_t i = qt * f.rows + r;
        if (i >= d.t)
          continue;
        for (int64_t c = 0; c < f.keys; ++c) {
          const int64_t j = kt * f.keys + c;
          if (j >= d.tk)
            continue;
          const float p = flashProbability(s[r * f.keys + c], lse[i]);
          const float dp = dot(do16 + i * d.e, v + j * d.e, d.e);
          const float ds = rounded(d.scale * p * (dp - rowD[i]), amp);
          const float pm = rounded(p, amp);
          for (int64_t x = 0; x < d.e; ++x) {
            dv[j * d.e + x] += pm * do16[i * d.e + x];
            dk[j * d.e + x] += ds * q[i * d.e + x];
            dq[i * d.e + x] += ds * k[j * d.e + x];
          }
        }
      }
    }
}

struct FlashCase {
  int64_t heads, t, e;
  bool causal;
  float scale; ///< large ones make logits near 1e4
};

class FlashPlanMatchesCpu
    : public ::testing::TestWithParam<std::tuple<FlashCase, bool>> {};

/// Forward and backward through the tiles against the CPU device. fp32 at
/// 1e-5 (out) and 1e-4 (gradients). Under amp both sides round q, k, v and
/// dout to bf16; the CPU rounds the normalized P and dS before its
/// products, the kernels the unnormalized exp2(s - running max) and dS:
/// the same 8-bit significand at other scales, so a product of n terms may
/// differ by a few of bf16's half-ulps (2^-9 relative) per term. 2e-2
/// relative (about 10 of them) holds that with margin and still fails a
/// wrong mask, scale or tile (errors of order 1).
TEST_P(FlashPlanMatchesCpu, ForwardAndBackward) {
  const auto [c, amp] = GetParam();
  AttentionDims d;
  d.heads = c.heads;
  d.t = d.tk = c.t;
  d.e = c.e;
  d.scale = c.scale;
  d.causal = c.causal;
  const FlashTiles fwd = flashForwardTiles(d.e), bwd = flashBackwardTiles(d.e);
  ASSERT_GT(fwd.dim, 0);
  ASSERT_LE(fwd.sharedBytes, kSharedLimit);
  const std::string what = "t " + std::to_string(c.t) + " e " +
                           std::to_string(c.e) + (c.causal ? " causal" : "") +
                           (amp ? " amp" : "");
  const whale::testing::AttentionReference r =
      whale::testing::cpuAttention(d, 31, amp);
  const std::vector<float> &q = r.q, &k = r.k, &v = r.v, &dout = r.dout;

  const std::vector<float> qm = whale::testing::roundedOperand(q, amp),
                           km = whale::testing::roundedOperand(k, amp),
                           vm = whale::testing::roundedOperand(v, amp),
                           dom = whale::testing::roundedOperand(dout, amp);
  std::vector<float> out(q.size()), lse(d.heads * d.t), dq(q.size(), 0),
      dk(q.size(), 0), dv(q.size(), 0);
  const int64_t head = d.t * d.e;
  for (int64_t h = 0; h < d.heads; ++h)
    flashForward(d, fwd, amp, &qm[h * head], &km[h * head], &vm[h * head],
                 &out[h * head], &lse[h * d.t]);
  // dS = scale (dP - D): near one-hot rows make dP - D a cancellation whose
  // fp32 rounding (1e-7 of terms of order 1) the scale multiplies, on
  // either side; the gradients' tolerance grows with the scale.
  const float tol = amp ? 2e-2f : 1e-5f,
              gradTol = (amp ? 2e-2f : 1e-4f) * std::max(1.0f, d.scale);
  expectAllClose(out, r.out, tol, what + " forward");
  if (bwd.dim == 0) // past 128 columns the chunked GEMMs take the backward
    return;
  ASSERT_LE(bwd.sharedBytes, kSharedLimit);
  for (int64_t h = 0; h < d.heads; ++h)
    flashBackward(d, bwd, amp, &qm[h * head], &km[h * head], &vm[h * head],
                  &out[h * head], &dout[h * head], &lse[h * d.t],
                  &dom[h * head], &dq[h * head], &dk[h * head], &dv[h * head]);
  expectAllClose(dq, r.dq, gradTol, what + " dq");
  expectAllClose(dk, r.dk, gradTol, what + " dk");
  expectAllClose(dv, r.dv, gradTol, what + " dv");
}

INSTANTIATE_TEST_SUITE_P(
    Tiles, FlashPlanMatchesCpu,
    ::testing::Combine(
        ::testing::Values(
            // a partial last tile, both masks, GPT-2's head width
            FlashCase{2, 100, 64, true, 0.125f},
            FlashCase{2, 100, 64, false, 0.125f},
            // exactly one tile, and less than one
            FlashCase{1, 64, 64, true, 0.125f},
            FlashCase{1, 5, 64, true, 0.125f},
            // a head width between the kernels' (zero columns padded)
            FlashCase{1, 70, 40, true, 0.15f},
            FlashCase{1, 130, 128, true, 0.088f},
            // past the backward's 128 columns: the forward alone
            FlashCase{1, 70, 256, false, 0.0625f},
            // logits near 1e4: the running maximum moves by thousands
            FlashCase{1, 90, 64, true, 3000.0f}),
        ::testing::Bool()));

/// The grid's bookkeeping on its own: every visible (query, key) pair is
/// visited exactly once by the forward and by the backward, masked tiles
/// are exactly those that hide a key or reach past the last, and the
/// shared memory fits sm_90 for every kernel width.
TEST(FlashPlan, TilesCoverEveryVisiblePairOnce) {
  for (bool causal : {false, true})
    for (int64_t t : {1, 63, 64, 65, 200, 1024})
      for (int64_t e : {16, 64, 128, 256}) {
        AttentionDims d;
        d.heads = 1;
        d.t = d.tk = t;
        d.e = e;
        d.causal = causal;
        const FlashTiles f = flashForwardTiles(e);
        ASSERT_GT(f.dim, 0);
        EXPECT_LE(f.sharedBytes, kSharedLimit);
        EXPECT_EQ(f.rows, 16 * f.warps);
        std::vector<int> seen(size_t(t) * t, 0);
        std::vector<int> tiles(tileCount(t, f.rows), 0);
        for (int64_t x = 0; x < tileCount(t, f.rows); ++x) {
          const int64_t qt = queryTileOfBlock(d, f, x);
          ++tiles[qt];
          for (int64_t kt = 0; kt < keyTilesEnd(d, f, qt); ++kt) {
            bool hides = false;
            for (int64_t i = qt * f.rows; i < std::min(t, (qt + 1) * f.rows);
                 ++i)
              for (int64_t j = kt * f.keys; j < (kt + 1) * f.keys; ++j) {
                if (j >= t || (causal && j > i)) {
                  hides = true;
                  continue;
                }
                ++seen[i * t + j];
              }
            EXPECT_EQ(tileNeedsMask(d, f, qt, kt), hides)
                << "t " << t << " tile " << qt << "," << kt;
          }
        }
        for (int n : tiles)
          EXPECT_EQ(n, 1) << "a query tile held by other than one block";
        for (int64_t i = 0; i < t; ++i)
          for (int64_t j = 0; j < t; ++j)
            ASSERT_EQ(seen[i * t + j], causal && j > i ? 0 : 1)
                << "forward, t " << t << " pair " << i << "," << j;
        const FlashTiles b = flashBackwardTiles(e);
        if (b.dim == 0) {
          EXPECT_GT(e, 128);
          continue;
        }
        EXPECT_LE(b.sharedBytes, kSharedLimit);
        std::fill(seen.begin(), seen.end(), 0);
        for (int64_t kt = 0; kt < tileCount(t, b.keys); ++kt)
          for (int64_t qt = queryTilesBegin(d, b, kt);
               qt < tileCount(t, b.rows); ++qt)
            for (int64_t i = qt * b.rows; i < std::min(t, (qt + 1) * b.rows);
                 ++i)
              for (int64_t j = kt * b.keys; j < std::min(t, (kt + 1) * b.keys);
                   ++j)
                if (!causal || j <= i)
                  ++seen[i * t + j];
        for (int64_t i = 0; i < t; ++i)
          for (int64_t j = 0; j < t; ++j)
            ASSERT_EQ(seen[i * t + j], causal && j > i ? 0 : 1)
                << "backward, t " << t << " pair " << i << "," << j;
      }
}

/// The row math's edges: a row before any visible key, one that sees none
/// at all, and the log-sum-exp's +inf making its P zero.
TEST(FlashPlan, RowMathAtItsEdges) {
  EXPECT_EQ(flashRescale(-INFINITY, -INFINITY), 1.0f);
  EXPECT_EQ(flashRescale(-INFINITY, 3.0f), 0.0f);
  EXPECT_FLOAT_EQ(flashRescale(2.0f, 3.0f), 0.5f);
  EXPECT_EQ(flashWeight(-INFINITY, -INFINITY), 0.0f);
  EXPECT_EQ(flashWeight(-INFINITY, 1.0f), 0.0f);
  EXPECT_EQ(flashLse(-INFINITY, 0.0f), INFINITY);
  EXPECT_EQ(flashInverseSum(0.0f), 0.0f);
  EXPECT_EQ(flashProbability(5.0f, INFINITY), 0.0f);
  EXPECT_EQ(flashProbability(-INFINITY, 1.0f), 0.0f);
  EXPECT_FLOAT_EQ(flashProbability(3.0f, flashLse(3.0f, 4.0f)), 0.25f);
  const float nan = std::nanf("");
  EXPECT_TRUE(std::isnan(flashMax(1.0f, nan)));
  EXPECT_TRUE(std::isnan(flashMax(nan, 1.0f)));
  EXPECT_TRUE(std::isnan(flashMax(-INFINITY, nan)));
  EXPECT_EQ(flashMax(-INFINITY, 2.0f), 2.0f);
  EXPECT_TRUE(std::isnan(flashWeight(1.0f, flashMax(-INFINITY, nan))));
  EXPECT_EQ(flashForwardTiles(300).dim, 0);
  EXPECT_EQ(flashBackwardTiles(200).dim, 0);
}

} // namespace
