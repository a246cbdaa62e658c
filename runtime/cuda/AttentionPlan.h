//===- AttentionPlan.h - attention as cuBLAS GEMMs and row kernels -*- C++
//-*-===//
//
// Attention on the GPU in the shape a GPU runs fast: heads go in chunks
// whose scores [h, t, tk] fit one scratch buffer, and per chunk
//   forward:  S = Q K^T, P = softmax(scale S) over the keys each query
//             sees (in place, a block per row), O = P V;
//   backward: P again, dV = P^T dO, dP = dO V^T,
//             dS = scale P (dP - D) with D_i = dO_i . O_i (in place),
//             dQ = dS K, dK = dS^T Q.
// The products are strided-batched GEMMs (GemmPlan.h's calls, reading
// Operand::A and Operand::B and writing Operand::C); the row math is here,
// plain C++ for both compilers as ElementMath.h, so a CPU unit test runs
// the whole plan through a reference GEMM against the CPU device.
//
// The first GPU run (docs/gpu.md) had attention a thread per query row,
// walking every key from global memory: 335 ms for one layer's gradient of
// GPT-2 small on an H200, where these GEMMs take a few milliseconds.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_CUDA_ATTENTIONPLAN_H
#define WHALE_RUNTIME_CUDA_ATTENTIONPLAN_H

#include "runtime/cuda/ElementMath.h"
#include "runtime/cuda/GemmPlan.h"

namespace whale::rt::cuda {

/// q and the output are [heads, t, e]; k and v [heads, tk, e]. Or
/// sequence-major when groupHeads is set: [batch, t, groupHeads, e], a
/// head's rows groupHeads e apart (runtime/ops/AttentionShape.h).
struct AttentionDims {
  int64_t heads = 0, t = 0, tk = 0, e = 0;
  float scale = 1;
  bool causal = false;    ///< needs t == tk (attentionShape checks)
  int64_t groupHeads = 0; ///< H of [..., T, H, E]; 0 when head-major
  /// Query heads a key head serves: above 1, the kernels see keys repeated
  /// (runtime/ops/GroupedKeys.h), never the grouped operands.
  int64_t kvGroup = 1;
};

/// Elements between consecutive rows of one head.
WHALE_HD int64_t rowStride(const AttentionDims &d) {
  return d.groupHeads ? d.groupHeads * d.e : d.e;
}

/// Where head `head` of an operand of `rows` rows a head starts.
WHALE_HD int64_t headOffset(const AttentionDims &d, int64_t head,
                            int64_t rows) {
  if (!d.groupHeads)
    return head * rows * d.e;
  return (head / d.groupHeads) * rows * d.groupHeads * d.e +
         (head % d.groupHeads) * d.e;
}

/// The keys query row i sees: all, or up to its own position.
WHALE_HD int64_t visibleKeys(const AttentionDims &d, int64_t i) {
  return d.causal ? i + 1 : d.tk;
}

/// The most scores a chunk holds: 256 MiB of fp32 (and their gradient as
/// much again), so long sequences go in more chunks, not more memory.
constexpr int64_t kMaxAttentionScores = int64_t(64) << 20;

/// Heads per chunk so that a chunk's scores hold at most `maxScores`
/// floats; at least one head, whatever its size.
inline int64_t headsPerChunk(const AttentionDims &d, int64_t maxScores) {
  const int64_t perHead = d.t * d.tk;
  if (perHead <= 0)
    return d.heads > 0 ? d.heads : 1;
  const int64_t h = maxScores / perHead;
  return h < 1 ? 1 : (h > d.heads ? d.heads : h);
}

// The six products over a chunk of `h` heads, each C = op(A) op(B).

/// S [h, t, tk] = Q [h, t, e] K^T.
inline GemmCall scoresGemm(const AttentionDims &d, int64_t h) {
  return rowMajorGemm(false, true, d.t, d.tk, d.e, Operand::A, d.t * d.e,
                      Operand::B, d.tk * d.e, Operand::C, d.t * d.tk, h);
}
/// O [h, t, e] = P [h, t, tk] V.
inline GemmCall outputGemm(const AttentionDims &d, int64_t h) {
  return rowMajorGemm(false, false, d.t, d.e, d.tk, Operand::A, d.t * d.tk,
                      Operand::B, d.tk * d.e, Operand::C, d.t * d.e, h);
}
/// dV [h, tk, e] = P^T dO.
inline GemmCall valueGradGemm(const AttentionDims &d, int64_t h) {
  return rowMajorGemm(true, false, d.tk, d.e, d.t, Operand::A, d.t * d.tk,
                      Operand::B, d.t * d.e, Operand::C, d.tk * d.e, h);
}
// The backward's other three products have the forward's shapes.
/// dP [h, t, tk] = dO V^T, as S = Q K^T.
inline GemmCall probabilityGradGemm(const AttentionDims &d, int64_t h) {
  return scoresGemm(d, h);
}
/// dQ [h, t, e] = dS K, as O = P V.
inline GemmCall queryGradGemm(const AttentionDims &d, int64_t h) {
  return outputGemm(d, h);
}
/// dK [h, tk, e] = dS^T Q, as dV = P^T dO.
inline GemmCall keyGradGemm(const AttentionDims &d, int64_t h) {
  return valueGradGemm(d, h);
}

// The row math: the kernels reduce a row's maximum, sum and D over a block
// and apply these per element.

/// Key j's scaled score for query i, or -inf where the mask hides it.
WHALE_HD float visibleScore(const AttentionDims &d, int64_t i, int64_t j,
                            float s) {
  return j < visibleKeys(d, i) ? s * d.scale : -INFINITY;
}

/// exp(score - row maximum); 0 for a hidden key or a row that sees none.
WHALE_HD float unnormalized(float score, float rowMax) {
  return rowMax == -INFINITY ? 0.0f : expf(score - rowMax);
}

/// dS_ij from P_ij, dP_ij and the row's D = dO_i . O_i (= sum_j P dP).
WHALE_HD float scoreGradient(const AttentionDims &d, float p, float dp,
                             float rowD) {
  return d.scale * p * (dp - rowD);
}

} // namespace whale::rt::cuda

#endif
