//===- AttentionCost.h - attention priced as a GPU runs it -*- C++ -*-===//
//
// The cost interface gives attention one FLOP count (every visible
// (query, key) pair, docs/cost-model.md). On a GPU the runtime runs it one
// of two ways (runtime/cuda, docs/gpu.md), and their times differ by more
// than any rate does:
//   - the chunked GEMMs (the default): full [t, tk] squares of scores per
//     head, causal or not, written to memory, softmaxed by a row kernel
//     and read back by the next product; under amp also copied to bf16;
//   - the fused kernels (WHALE_CUDA_FLASH=1): scores never leave the chip,
//     tiles above a causal diagonal are skipped, whole 64-row tiles are
//     computed, and the backward first recomputes each row's log-sum-exp
//     with a statistics-only forward.
// Both first copy their fp32 operands to bf16 under amp. Here each is
// listed as the kernels it launches, each priced as an op, so the planner,
// the balancer and the simulator see what the runtime does. The tiles
// mirror runtime/cuda/FlashPlan.h and AttentionPlan.h, which perfmodel may
// not include; AttentionCostTest holds the two together.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_PERFMODEL_ATTENTIONCOST_H
#define WHALE_PERFMODEL_ATTENTIONCOST_H

#include "perfmodel/OpCost.h"

#include <vector>

namespace whale::perf {

struct DeviceModel;

/// Whether the GPU runtime runs attention as the fused kernels: the
/// environment's WHALE_CUDA_FLASH, read as CudaDevice reads it.
bool gpuFusedAttention();

/// The fused kernels' tiles for a head of `e` columns (0 where no kernel
/// holds it): query rows and keys a tile, the padded head width.
struct FusedAttentionTiles {
  int rows = 0, keys = 0, dim = 0;
};
FusedAttentionTiles fusedForwardTiles(int64_t e);
FusedAttentionTiles fusedBackwardTiles(int64_t e);

/// (query tile, key tile) pairs the fused kernels compute per head: all,
/// or under the causal mask those at or below the diagonal.
int64_t fusedTilePairs(const AttentionShape &a, const FusedAttentionTiles &f);

/// Heads per chunk of the GEMM path: its scores hold at most 64 Mi floats.
int64_t gemmPathHeadsPerChunk(const AttentionShape &a);

/// A kernel attention launches, priced as an op, and how many times in a
/// row it runs alike: the GEMM path's chunks of heads are all the same but
/// the last, and a 1T model's attention at the global batch has tens of
/// thousands of them, which one entry stands for (the planner prices every
/// attention at every candidate cut).
struct AttentionKernel {
  OpCost cost;
  int64_t launches = 1;
};

/// The kernels attention (or, with a.backward, its gradient) launches on a
/// GPU, in order: fused or GEMMs as `fused` says (the fused kernels only
/// where their tiles hold the head width).
std::vector<AttentionKernel> gpuAttentionKernels(const AttentionShape &a,
                                                 bool bf16, bool fused);

/// Seconds of attention on a GPU: its kernels', summed.
double gpuAttentionSeconds(const OpCost &cost, const DeviceModel &device);

} // namespace whale::perf

#endif
