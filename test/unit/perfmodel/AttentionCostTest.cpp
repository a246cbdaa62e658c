//===- AttentionCostTest.cpp - attention priced as the GPU runtime runs it ===//
//
// perfmodel may not include the runtime, so AttentionCost.cpp mirrors the
// CUDA device's choices: the switch between the GEMMs and the fused
// kernels, the fused kernels' tiles, the GEMM path's chunks. These tests
// hold the mirror to runtime/cuda's own headers, and check what the
// pricing says of each path on a data-sheet H100.
//
//===----------------------------------------------------------------------===//

#include "perfmodel/AttentionCost.h"
#include "perfmodel/DeviceModel.h"
#include "runtime/cuda/FlashPlan.h"
#include "runtime/cuda/FlashSimt.h"

#include <gtest/gtest.h>

#include <cstdlib>

using namespace whale::perf;
namespace cuda = whale::rt::cuda;

namespace {

/// WHALE_CUDA_FLASH for one scope, restored after.
struct FlashFlag {
  std::string was;
  bool had;
  explicit FlashFlag(const char *value) {
    const char *old = std::getenv("WHALE_CUDA_FLASH");
    had = old != nullptr;
    was = old ? old : "";
    if (value)
      setenv("WHALE_CUDA_FLASH", value, 1);
    else
      unsetenv("WHALE_CUDA_FLASH");
  }
  ~FlashFlag() {
    if (had)
      setenv("WHALE_CUDA_FLASH", was.c_str(), 1);
    else
      unsetenv("WHALE_CUDA_FLASH");
  }
};

AttentionShape gpt2(bool backward) {
  // GPT-2 small at batch 8: 8 x 12 heads of 64 columns, context 1024.
  return AttentionShape{96, 1024, 1024, 64, /*causal=*/true, backward};
}

using Kernels = std::vector<AttentionKernel>;

double seconds(const Kernels &kernels, const DeviceModel &d) {
  double s = 0;
  for (const AttentionKernel &k : kernels)
    s += double(k.launches) * opSeconds(k.cost, d);
  return s;
}

double flops(const Kernels &kernels, bool matmulOnly) {
  double f = 0;
  for (const AttentionKernel &k : kernels)
    if (k.cost.matmul || !matmulOnly)
      f += double(k.launches) * k.cost.flops;
  return f;
}

double bytes(const Kernels &kernels) {
  double b = 0;
  for (const AttentionKernel &k : kernels)
    b += double(k.launches) * k.cost.bytes;
  return b;
}

/// Kernel launches in all, each chunk's counted.
int64_t launches(const Kernels &kernels) {
  int64_t n = 0;
  for (const AttentionKernel &k : kernels)
    n += k.launches;
  return n;
}

TEST(AttentionCost, TheSwitchIsTheRuntimes) {
  for (const char *value : {(const char *)nullptr, "0", "1", "yes", ""}) {
    FlashFlag flag(value);
    EXPECT_EQ(gpuFusedAttention(), cuda::flashAttentionRequested())
        << (value ? value : "(unset)");
  }
}

TEST(AttentionCost, TilesAndChunksAreTheRuntimes) {
  for (int64_t e = 1; e <= 300; ++e) {
    const FusedAttentionTiles f = fusedForwardTiles(e),
                              b = fusedBackwardTiles(e);
    // The bf16 kernels and the fp32 ones tile alike.
    for (const cuda::FlashTiles &want :
         {cuda::flashForwardTiles(e), cuda::flashForwardTilesF32(e)}) {
      EXPECT_EQ(f.dim, want.dim) << e;
      if (want.dim) {
        EXPECT_EQ(f.rows, want.rows) << e;
        EXPECT_EQ(f.keys, want.keys) << e;
      }
    }
    for (const cuda::FlashTiles &want :
         {cuda::flashBackwardTiles(e), cuda::flashBackwardTilesF32(e)}) {
      EXPECT_EQ(b.dim, want.dim) << e;
      if (want.dim) {
        EXPECT_EQ(b.rows, want.rows) << e;
        EXPECT_EQ(b.keys, want.keys) << e;
      }
    }
  }
  for (bool causal : {false, true})
    for (int64_t t : {1, 63, 64, 65, 1000, 4096})
      for (int64_t e : {64, 256}) {
        AttentionShape a{3, t, t, e, causal, false};
        cuda::AttentionDims d;
        d.heads = 3;
        d.t = d.tk = t;
        d.e = e;
        d.causal = causal;
        const cuda::FlashTiles f = cuda::flashForwardTiles(e);
        int64_t pairs = 0;
        for (int64_t qt = 0; qt < cuda::tileCount(t, f.rows); ++qt)
          pairs += cuda::keyTilesEnd(d, f, qt);
        EXPECT_EQ(fusedTilePairs(a, fusedForwardTiles(e)), pairs)
            << t << (causal ? " causal" : "");
        for (int64_t heads : {1, 12, 96, 1000}) {
          a.heads = d.heads = heads;
          EXPECT_EQ(gemmPathHeadsPerChunk(a),
                    cuda::headsPerChunk(d, cuda::kMaxAttentionScores));
        }
      }
}

/// The GEMMs compute every square of scores, causal or not, and move them
/// through memory; the fused kernels compute the tiles at or below the
/// diagonal, and their backward recomputes the forward's statistics.
TEST(AttentionCost, EachPathAsItRuns) {
  const DeviceModel *h100 = findGpuModel("H100");
  ASSERT_NE(h100, nullptr);
  const AttentionShape fwd = gpt2(false), bwd = gpt2(true);
  const double square = 2.0 * 96 * 1024 * 1024 * 64; // one product

  // GEMMs, amp: q, k, v to bf16, then per chunk of 64 heads the scores,
  // the softmax, P to bf16 and P V: 3 + 2 x 4 launches.
  const Kernels gemm = gpuAttentionKernels(fwd, true, false);
  EXPECT_EQ(gemmPathHeadsPerChunk(fwd), 64);
  EXPECT_EQ(launches(gemm), 3 + 2 * 4);
  EXPECT_DOUBLE_EQ(flops(gemm, true), 2 * square);
  // In fp32 neither copy runs.
  EXPECT_EQ(launches(gpuAttentionKernels(fwd, false, false)), 2 * 3);
  // The backward's five products, over full squares too.
  EXPECT_DOUBLE_EQ(flops(gpuAttentionKernels(bwd, true, false), true),
                   5 * square);

  // Fused: 16 query tiles of 64 visit 1 + 2 + ... + 16 key tiles.
  EXPECT_EQ(fusedTilePairs(fwd, fusedForwardTiles(64)), 136);
  const double tiles = 96.0 * 136 * 64 * 64;
  const Kernels fused = gpuAttentionKernels(fwd, true, true);
  EXPECT_EQ(launches(fused), 3 + 1);
  EXPECT_DOUBLE_EQ(flops(fused, true), tiles * 4 * 64);
  EXPECT_LT(flops(fused, true), 0.55 * flops(gemm, true));
  // Its gradient: dout to bf16 too, the statistics (Q K^T alone), dq
  // zeroed, D = dO . O, then five products over the same tiles.
  const Kernels fusedGrad = gpuAttentionKernels(bwd, true, true);
  EXPECT_EQ(launches(fusedGrad), 4 + 4);
  EXPECT_DOUBLE_EQ(flops(fusedGrad, true), tiles * 2 * 64 + tiles * 10 * 64);

  // The fused forward moves the operands and the output only: each of q,
  // k, v read in fp32 and written in bf16 (6 bytes), read again in bf16
  // (2), the output written in fp32 (4). The GEMMs also write and read
  // every score, several times over.
  const double fusedBytes = bytes(fused), gemmBytes = bytes(gemm);
  const double elements = 96.0 * 1024 * 64;
  EXPECT_DOUBLE_EQ(fusedBytes, elements * (3 * 6 + 3 * 2 + 4));
  EXPECT_GT(gemmBytes, 96.0 * 1024 * 1024 * 4 * 3);
  EXPECT_LT(seconds(fused, *h100), seconds(gemm, *h100));

  // Past 128 columns the fused backward gives way to the GEMMs, as the
  // runtime does; past 256 so does the forward.
  AttentionShape wide = bwd;
  wide.e = 256;
  EXPECT_EQ(launches(gpuAttentionKernels(wide, true, true)),
            launches(gpuAttentionKernels(wide, true, false)));
  wide.backward = false;
  EXPECT_EQ(launches(gpuAttentionKernels(wide, true, true)), 3 + 1);
  wide.e = 300;
  EXPECT_EQ(launches(gpuAttentionKernels(wide, true, true)),
            launches(gpuAttentionKernels(wide, true, false)));
  // Sequence-major operands: the fused kernels read them in place; the
  // GEMMs take head-major copies, permuted in and the results back (fp32,
  // 8 bytes an element moved): 4 transposes forward, 8 backward.
  for (bool backward : {false, true}) {
    AttentionShape seq = backward ? bwd : fwd;
    seq.sequenceMajor = true;
    const AttentionShape plain = backward ? bwd : fwd;
    EXPECT_EQ(launches(gpuAttentionKernels(seq, true, true)),
              launches(gpuAttentionKernels(plain, true, true)));
    const Kernels permuted = gpuAttentionKernels(seq, true, false);
    EXPECT_EQ(launches(permuted),
              launches(gpuAttentionKernels(plain, true, false)) +
                  (backward ? 8 : 4));
    EXPECT_DOUBLE_EQ(bytes(permuted) -
                         bytes(gpuAttentionKernels(plain, true, false)),
                     (backward ? 8 : 4) * 8 * 96.0 * 1024 * 64);
  }
  // No key: one fill.
  AttentionShape none = fwd;
  none.tk = 0;
  EXPECT_EQ(launches(gpuAttentionKernels(none, true, true)), 1);
}

/// A 1T model's attention at the global batch (3,072 x 160 heads of 2,048
/// positions: 30,720 chunks of 16 heads) is two entries a chunk's kernels,
/// not thirty thousand: the planner prices it at every candidate cut, and
/// listed chunk by chunk it took minutes. The price is each chunk's.
TEST(AttentionCost, ChunksAlikeAreOneEntry) {
  AttentionShape a;
  a.heads = 3072 * 160 + 5;
  a.t = a.tk = 2048;
  a.e = 160;
  a.causal = true;
  const Kernels k = gpuAttentionKernels(a, true, false);
  EXPECT_EQ(gemmPathHeadsPerChunk(a), 16);
  // The three copies to bf16, then a chunk's four (scores, softmax, P to
  // bf16, P V) for the full chunks and again for the rest.
  EXPECT_EQ(k.size(), 3u + 2 * 4);
  EXPECT_EQ(launches(k), 3 + 30720 * 4 + 4);
  AttentionShape one = a;
  one.heads = 16;
  const double perChunk = flops(gpuAttentionKernels(one, true, false), true);
  one.heads = 5;
  const double rest = flops(gpuAttentionKernels(one, true, false), true);
  EXPECT_DOUBLE_EQ(flops(k, true), 30720 * perChunk + rest);
}

/// opSeconds prices attention on a GPU by the switch in force, and on a
/// CPU as before (one product of its pairs at the matrix rate).
TEST(AttentionCost, OpSecondsFollowsTheSwitch) {
  const DeviceModel *h100 = findGpuModel("H100");
  ASSERT_NE(h100, nullptr);
  OpCost c;
  c.matmul = true;
  c.bf16 = true;
  c.batch = 96;
  c.m = c.n = 1024;
  c.k = 64;
  c.flops = 96.0 * 1024 * 1025 / 2 * (4 * 64 + 5);
  c.attention = gpt2(false);
  double gemm, fused;
  {
    FlashFlag off(nullptr);
    gemm = opSeconds(c, *h100);
    EXPECT_DOUBLE_EQ(
        gemm, seconds(gpuAttentionKernels(c.attention, true, false), *h100));
  }
  {
    FlashFlag on("1");
    fused = opSeconds(c, *h100);
    EXPECT_DOUBLE_EQ(
        fused, seconds(gpuAttentionKernels(c.attention, true, true), *h100));
  }
  EXPECT_LT(fused, gemm);
  const DeviceModel cpu = cpuModel(1e11, 2, 0);
  OpCost plain = c;
  plain.attention = {};
  EXPECT_DOUBLE_EQ(opSeconds(c, cpu), opSeconds(plain, cpu));
}

} // namespace
