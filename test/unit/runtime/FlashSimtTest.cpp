//===- FlashSimtTest.cpp - the fp32 flash kernels' blocks, on the CPU ----===//
//
// FlashAttentionF32.cu runs FlashSimt.h's block drivers a thread at a
// time; here a CPU block runs them every thread of a phase in turn, with
// the same shared layout, registers per thread and sync points, so the
// kernels' own indexing, masks and tile walks are checked against the CPU
// device's attention at the contract's tolerance. Shared memory starts as
// NaN for every block: a phase that reads what no phase wrote fails.
// Only a GPU runs the kernels themselves (the gpu-labelled tests).
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/FlashSimt.h"
#include "../RandomValues.h"
#include "AttentionReference.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

using namespace whale::rt;
using namespace whale::rt::cuda;

namespace {

using whale::testing::expectAllClose;
using whale::testing::randomValues;

/// FlashSimt.h's block on the CPU: all 256 threads, each phase in turn.
struct CpuBlock {
  template <typename T> struct Registers {
    std::unique_ptr<T[]> all{new T[kSimtThreads]};
    T &operator[](int tid) { return all[tid]; }
  };
  std::vector<float> memory;
  int syncs = 0;
  explicit CpuBlock(size_t bytes)
      : memory(bytes / sizeof(float), std::numeric_limits<float>::quiet_NaN()) {
  }
  int begin() const { return 0; }
  int end() const { return kSimtThreads; }
  void sync() { ++syncs; }
  float *shared() { return memory.data(); }
  void add(float *p, float v) const { *p += v; }
};

template <int DIM> void forwardGrid(const SimtArgs &a) {
  const int64_t blocks = tileCount(a.d.t, a.f.rows) * a.d.heads;
  for (int64_t x = 0; x < blocks; ++x) {
    CpuBlock b(a.f.sharedBytes);
    simtForwardBlock<SimtForwardShape<DIM>>(b, a, x);
  }
}

template <int DIM> void backwardGrid(const SimtArgs &a) {
  const int64_t blocks = tileCount(a.d.tk, a.f.keys) * a.d.heads;
  for (int64_t x = 0; x < blocks; ++x) {
    CpuBlock b(a.f.sharedBytes);
    simtBackwardBlock<SimtBackwardShape<DIM>>(b, a, x);
  }
}

/// The launches of FlashAttentionF32.cu, on CPU blocks.
void runForward(const SimtArgs &a) {
  switch (a.f.dim) {
  case 64:
    return forwardGrid<64>(a);
  case 128:
    return forwardGrid<128>(a);
  case 256:
    return forwardGrid<256>(a);
  default:
    FAIL() << "no forward kernel for width " << a.d.e;
  }
}

void runBackward(const SimtArgs &a) {
  switch (a.f.dim) {
  case 64:
    return backwardGrid<64>(a);
  case 128:
    return backwardGrid<128>(a);
  default:
    FAIL() << "no backward kernel for width " << a.d.e;
  }
}

struct SimtCase {
  int64_t heads, t, e;
  bool causal;
  float scale;            ///< large ones make logits near 1e4
  int64_t groupHeads = 0; ///< sequence-major [heads / H, t, H, e] when set
};

class FlashSimtMatchesCpu : public ::testing::TestWithParam<SimtCase> {};

/// The fp32 kernels against the CPU device: the output at 1e-5 and the
/// gradients at the contract's 1e-4 (grown with the scale, as in
/// FlashPlanTest: dS = scale (dP - D) multiplies a cancellation's
/// rounding).
TEST_P(FlashSimtMatchesCpu, ForwardAndBackward) {
  const SimtCase c = GetParam();
  AttentionDims d;
  d.heads = c.heads;
  d.t = d.tk = c.t;
  d.e = c.e;
  d.scale = c.scale;
  d.causal = c.causal;
  const std::string what = "t " + std::to_string(c.t) + " e " +
                           std::to_string(c.e) + (c.causal ? " causal" : "") +
                           (c.groupHeads ? " sequence-major" : "");
  // The reference is head-major; a sequence-major case permutes its
  // operands in and its answers out (SequenceMajor in AttentionReference).
  whale::testing::AttentionReference r =
      whale::testing::cpuAttention(d, 41, /*amp=*/false);
  if (c.groupHeads) {
    d.groupHeads = c.groupHeads;
    r = whale::testing::sequenceMajor(r, d);
  }
  const std::vector<float> &q = r.q, &k = r.k, &v = r.v, &dout = r.dout;
  std::vector<float> out(q.size()), lse(d.heads * d.t);
  SimtArgs fa;
  fa.d = d;
  fa.f = flashForwardTilesF32(d.e);
  ASSERT_GT(fa.f.dim, 0) << what;
  ASSERT_LE(fa.f.sharedBytes, kSharedLimit) << what;
  fa.q = q.data();
  fa.k = k.data();
  fa.v = v.data();
  fa.out = out.data();
  fa.lseOut = lse.data();
  runForward(fa);
  expectAllClose(out, r.out, 1e-5f, what + " forward");

  // The statistics alone (the backward's recomputation) are the same.
  std::vector<float> lse2(lse.size());
  fa.out = nullptr;
  fa.lseOut = lse2.data();
  runForward(fa);
  for (size_t i = 0; i < lse.size(); ++i)
    ASSERT_EQ(lse2[i], lse[i]) << what << " statistics-only lse at " << i;

  SimtArgs ba;
  ba.d = d;
  ba.f = flashBackwardTilesF32(d.e);
  if (ba.f.dim == 0) { // past 128 columns the chunked GEMMs take it
    EXPECT_GT(d.e, 128);
    return;
  }
  ASSERT_LE(ba.f.sharedBytes, kSharedLimit) << what;
  std::vector<float> rowD(d.heads * d.t), dq(q.size(), 0), dk(q.size()),
      dv(q.size());
  for (int64_t i = 0; i < d.heads * d.t; ++i) { // flashRowDots' D = dO . O
    const int64_t at = headOffset(d, i / d.t, d.t) + (i % d.t) * rowStride(d);
    float sum = 0;
    for (int64_t x = 0; x < d.e; ++x)
      sum += dout[at + x] * out[at + x];
    rowD[i] = sum;
  }
  ba.q = q.data();
  ba.k = k.data();
  ba.v = v.data();
  ba.dout = dout.data();
  ba.lse = lse.data();
  ba.rowD = rowD.data();
  ba.dq = dq.data();
  ba.dk = dk.data();
  ba.dv = dv.data();
  runBackward(ba);
  const float gradTol = 1e-4f * std::max(1.0f, d.scale);
  expectAllClose(dq, r.dq, gradTol, what + " dq");
  expectAllClose(dk, r.dk, gradTol, what + " dk");
  expectAllClose(dv, r.dv, gradTol, what + " dv");
}

INSTANTIATE_TEST_SUITE_P(
    Blocks, FlashSimtMatchesCpu,
    ::testing::Values(
        // a partial last tile, both masks, GPT-2's head width, two heads
        SimtCase{2, 100, 64, true, 0.125f}, SimtCase{2, 100, 64, false, 0.125f},
        // exactly one tile, less than one, and one row
        SimtCase{1, 64, 64, true, 0.125f}, SimtCase{1, 5, 64, false, 0.125f},
        SimtCase{1, 1, 64, true, 0.125f},
        // widths between the kernels' (zero columns padded) and at them
        SimtCase{1, 70, 40, true, 0.15f}, SimtCase{1, 130, 128, true, 0.088f},
        SimtCase{1, 90, 100, false, 0.1f},
        // past the backward's 128 columns: the forward alone, 32 keys a tile
        SimtCase{1, 70, 256, true, 0.0625f}, SimtCase{1, 33, 200, false, 0.07f},
        // logits near 1e4: the running maximum moves by thousands
        SimtCase{1, 90, 64, true, 3000.0f},
        // sequence-major [2, t, 3, e]: rows 3 e apart, heads e apart
        SimtCase{6, 100, 64, true, 0.125f, 3},
        SimtCase{6, 70, 40, false, 0.15f, 3},
        SimtCase{2, 33, 200, true, 0.07f, 2}));

/// A NaN in one query row reaches that row's output and no other row's:
/// the kernels neither hide it nor spread it across rows.
TEST(FlashSimt, NanStaysInItsRow) {
  AttentionDims d;
  d.heads = 1;
  d.t = d.tk = 80;
  d.e = 64;
  d.scale = 0.125f;
  d.causal = true;
  std::vector<float> q = randomValues(d.t * d.e, 51),
                     k = randomValues(d.t * d.e, 52),
                     v = randomValues(d.t * d.e, 53), out(q.size()), lse(d.t);
  q[70 * d.e + 3] = std::numeric_limits<float>::quiet_NaN();
  SimtArgs a;
  a.d = d;
  a.f = flashForwardTilesF32(d.e);
  a.q = q.data();
  a.k = k.data();
  a.v = v.data();
  a.out = out.data();
  a.lseOut = lse.data();
  runForward(a);
  for (int64_t i = 0; i < d.t; ++i)
    EXPECT_EQ(std::isnan(out[i * d.e]), i == 70) << "row " << i;
}

/// Every kernel's shared memory fits sm_90, and the thread grid covers
/// each tile exactly: 256 threads a block, tiles multiples of 16.
TEST(FlashSimt, TilesFitTheGpu) {
  for (int64_t e : {1, 16, 64, 65, 128, 129, 256}) {
    const FlashTiles f = flashForwardTilesF32(e);
    ASSERT_GT(f.dim, 0) << e;
    EXPECT_GE(f.dim, e);
    EXPECT_LE(f.sharedBytes, kSharedLimit) << e;
    EXPECT_EQ(f.warps * 32, kSimtThreads);
    const FlashTiles b = flashBackwardTilesF32(e);
    EXPECT_EQ(b.dim > 0, e <= 128) << e;
    if (b.dim) {
      EXPECT_LE(b.sharedBytes, kSharedLimit) << e;
    }
  }
  EXPECT_EQ(flashForwardTilesF32(257).dim, 0);
}

} // namespace
