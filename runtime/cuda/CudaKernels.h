//===- CudaKernels.h - launchers of the CUDA kernels -------------*- C++
//-*-===//
//
// Plain C++ declarations of what runtime/cuda/CudaKernels.cu launches, so
// the device's host code (CudaDevice.cpp) needs no kernel syntax. Every
// launcher queues work on `stream` and returns at once; shapes arrive as
// index maps (ElementMath.h) computed on the host (IndexMaps.h).
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_CUDA_CUDAKERNELS_H
#define WHALE_RUNTIME_CUDA_CUDAKERNELS_H

#include "runtime/cuda/AttentionPlan.h"
#include "runtime/cuda/ColumnSums.h"
#include "runtime/cuda/ElementMath.h"
#include "runtime/ops/DropoutMath.h"
#include "runtime/ops/ElementProgram.h"
#include "runtime/ops/MoeMath.h"
#include "runtime/ops/RopeFrequencies.h"
#include "runtime/ops/TopKMath.h"
#include "support/ConvMath.h"

#include <cuda_runtime.h>

#include <cstdint>
#include <utility>
#include <vector>

namespace whale::rt::cuda {

/// What a kernel found wrong in its data (an id or a label out of range);
/// the device reads it back after the kernel and turns it into a Status.
struct DataError {
  int64_t position; ///< -1: none
  int64_t value;
};

void fillF32(cudaStream_t s, float *p, int64_t n, float v);
void fillF64(cudaStream_t s, double *p, int64_t n, double v);
void fillI32(cudaStream_t s, int32_t *p, int64_t n, int32_t v);
void fillI64(cudaStream_t s, int64_t *p, int64_t n, int64_t v);
/// 16-bit words: bf16 storage, its bits rounded by the caller.
void fillU16(cudaStream_t s, uint16_t *p, int64_t n, uint16_t v);

/// One Device::MemberSum's pointers, passed to the kernel by value: the
/// buckets of ranks sharing the GPU (runtime/comm/SharedDeviceGroup.h).
constexpr int kMemberPointers = 16;
struct MemberPointers {
  const float *from[kMemberPointers];
  float *to[kMemberPointers];
  int froms = 0, tos = 0;
};
/// n elements of every `to` become the sum of every `from`, added in their
/// order in fp32 (the host communicator's order and bits).
void sumMembers(cudaStream_t s, const MemberPointers &p, int64_t n);

/// out = a op b over the output's index space (op: BinaryOp's order).
void binary(cudaStream_t s, int op, const float *a, const float *b, float *out,
            const Strided &map, int64_t n);
/// The gradient of one operand (`which` 0: a, 1: b) of a op b: per element
/// of the gradient (`part` = its shape aligned to the output's rank), the
/// sum over the output elements it fed. `full` is the output.
void binaryGrad(cudaStream_t s, int op, int which, const float *a,
                const float *b, const float *dout, float *grad,
                const Walk &walk, int64_t parts, int64_t perPart);

/// Floats of scratch a sum over `rows` of `outputs` [width] sums needs
/// for its partials (ColumnSums.h; 0 where one split holds every row).
int64_t columnSumScratch(int64_t rows, int64_t width, int outputs);
/// binaryGrad where the gradient sums dout's leading rows (a bias's
/// gradient: columnOperands), coalesced; columnSumScratch(rows, width, 1)
/// floats of `partials`.
void binaryGradColumns(cudaStream_t s, int op, int which, const float *a,
                       const float *b, const float *dout, float *grad,
                       const ColumnOperands &shape, float *partials);
/// out[j] = the sum over rows of x [rows, width] at column j, / divisor
/// (a sum or mean over leading axes); columnSumScratch(rows, width, 1)
/// floats of `partials`.
void sumRows(cudaStream_t s, const float *x, float *out, int64_t rows,
             int64_t width, float divisor, float *partials);

/// sumRows's sums (divisor 1) of x, with x rounded to bf16 into `rounded`
/// as the same threads read it: the bits of castToBf16 and of
/// binaryGradColumns's bias sum, x read once.
void roundAndSumRows(cudaStream_t s, const float *x, void *rounded, float *sum,
                     int64_t rows, int64_t width, float *partials);

/// A fused region's element program (runtime/ops/ElementProgram.h), `code` in
/// device memory: a thread per point no sum adds over, or, with `parts` >
/// 1 (fused::termParts), a thread per part of each such point's terms,
/// adding into `partials` (outputs x parts x threads floats) that a second
/// kernel adds up in order.
struct FusedOperands {
  const void *data[fused::kMaxOperands];
};
void fusedProgram(cudaStream_t s, const fused::Layout &layout,
                  const fused::Instr *code, int count,
                  const FusedOperands &operands, int64_t parts = 1,
                  float *partials = nullptr);
/// The same through a program's generated kernel (ElementKernelSource.h),
/// whose parameters are the operands, the parts and the partials.
void fusedKernel(cudaStream_t s, cudaKernel_t kernel,
                 const fused::Layout &layout, const FusedOperands &operands,
                 int64_t parts, float *partials);

/// Attention's row steps (AttentionPlan.h), over `rows` query rows of a
/// chunk of heads: its scores into probabilities in place, and dP into dS
/// in place.
void attentionSoftmax(cudaStream_t s, const AttentionDims &d, float *scores,
                      int64_t rows);
void attentionScoreGrad(cudaStream_t s, const AttentionDims &d, const float *p,
                        float *dp, const float *dout, const float *out,
                        int64_t rows);

void unary(cudaStream_t s, int op, const float *x, float *out, int64_t n);
void unaryGrad(cudaStream_t s, int op, const float *x, const float *y,
               const float *dy, float *dx, int64_t n);

/// scores[..., i, j] masked where j > i + (cols - rows); `masked` is -inf
/// forward and 0 for the gradient (dx = dy elsewhere).
void causalMask(cudaStream_t s, const float *x, float *out, int64_t n,
                int64_t rows, int64_t cols, bool gradient);

/// out[i] = x[map(i)] (broadcast and transpose alike: map.strideA).
void gather(cudaStream_t s, const float *x, float *out, const Strided &map,
            int64_t n);

/// runtime/ops/TopKMath.h's: a thread per row selects, a thread per input
/// element finds its rank for the gradient.
/// A mixture of experts' slots [G, S, k] (runtime/ops/MoeMath.h), a thread
/// per group with `counts` [G, E] as its scratch; reports a choice outside
/// [0, E).
void moeSlots(cudaStream_t s, const MoeShape &m, const int32_t *experts,
              int32_t *slots, int32_t *counts, DataError *error);
/// Kept choices' tokens into zeroed `slotted`, each times its gate (one
/// when `gates` is null).
void moeDispatch(cudaStream_t s, const MoeShape &m, const float *tokens,
                 const int32_t *slots, const float *gates, float *slotted);
void moeCombine(cudaStream_t s, const MoeShape &m, const float *slotted,
                const int32_t *slots, const float *gates, float *tokens);
void moeGateGrad(cudaStream_t s, const MoeShape &m, const float *tokens,
                 const float *slotted, const int32_t *slots, float *dgates);
/// y[i] = x[i] x scale where `draw` (or `*live`, on the device, where
/// given: a captured step's) keeps element `base + i`, else 0.
void dropout(cudaStream_t s, const float *x, int64_t n, const DropoutDraw &draw,
             const DropoutDraw *live, int64_t base, float scale, float *y);
/// out [count, classes] zeroed first; reports an id outside [0, classes).
void oneHot(cudaStream_t s, const int32_t *ids, int64_t count, int64_t classes,
            float *out, DataError *error);

void topk(cudaStream_t s, const float *x, int64_t rows, int64_t n, int64_t k,
          float *values, int32_t *positions);
void topkGrad(cudaStream_t s, const float *x, int64_t rows, int64_t n,
              int64_t k, const float *dy, float *dx);

/// support/ConvMath.h's functions, a thread per output element.
void im2col(cudaStream_t s, const float *x, float *cols, int64_t rowStride,
            const Planes &p, const Window2d &w);
void col2im(cudaStream_t s, const float *cols, int64_t rowStride, float *dx,
            const Planes &p, const Window2d &w);
void pool2d(cudaStream_t s, bool max, const float *x, float *y,
            const Planes &p, const Window2d &w);
void pool2dGrad(cudaStream_t s, bool max, const float *x, const float *dy,
                float *dx, const Planes &p, const Window2d &w);

/// Softmax over the middle of [outer, extent, inner].
void softmax(cudaStream_t s, const float *x, float *y, int64_t outer,
             int64_t extent, int64_t inner);
void softmaxGrad(cudaStream_t s, const float *y, const float *dy, float *dx,
                 int64_t outer, int64_t extent, int64_t inner);

/// Over rows of `width`; mean and rstd (one per row) are written for the
/// backward pass.
/// Batch normalization over x [rows, channels, size] (device arrays of
/// `channels` floats): sums[c] of channel c (of squares about center[c]
/// when given); y = (x - center) scale + shift; sums[c] = sum(dy),
/// sums[C + c] = sum(dy (x - center) invstd); dx = a dy + b (x - center) + d.
void channelSums(cudaStream_t s, const float *x, const float *center,
                 float *sums, int64_t rows, int64_t channels, int64_t size);
void channelAffine(cudaStream_t s, const float *x, const float *center,
                   const float *scale, const float *shift, float *y,
                   int64_t n, int64_t channels, int64_t size);
void channelGradSums(cudaStream_t s, const float *x, const float *dy,
                     const float *center, const float *invstd, float *sums,
                     int64_t rows, int64_t channels, int64_t size);
void channelGradInput(cudaStream_t s, const float *x, const float *dy,
                      const float *center, const float *a, const float *b,
                      const float *d, float *dx, int64_t n, int64_t channels,
                      int64_t size);
void layerNorm(cudaStream_t s, const float *x, const float *gamma,
               const float *beta, float eps, float *y, float *mean, float *rstd,
               int64_t rows, int64_t width);
/// dgamma and dbeta are sums over rows (ColumnSums.h), with
/// columnSumScratch(rows, width, 2) floats of `partials`.
void layerNormGrad(cudaStream_t s, const float *x, const float *gamma,
                   const float *mean, const float *rstd, const float *dy,
                   float *dx, float *dgamma, float *dbeta, int64_t rows,
                   int64_t width, float *partials);
/// The whole of layernorm's gradient in one pass over x and dy, for rows
/// of at most kLayerNormRowMax: a block's threads keep its row in
/// registers, find the statistics as the forward kernel does (the same
/// sums in the same order), write dx, and add dgamma's and dbeta's terms
/// of their columns over the block's rows; a second kernel adds the
/// blocks' sums in block order. With `residual`, dx is residual + the
/// gradient (whale.layernorm_grad's `plus`). layerNormGradScratch(rows,
/// width) floats of `partials`. The unfused path reads x three times and dy
/// twice, and writes the forward's output it does not need.
constexpr int64_t kLayerNormRowMax = 2048;
int64_t layerNormGradScratch(int64_t rows, int64_t width);
void layerNormGradFused(cudaStream_t s, const float *x, const float *gamma,
                        const float *dy, const float *residual, float eps,
                        float *dx, float *dgamma, float *dbeta, int64_t rows,
                        int64_t width, float *partials);

/// Rotary position embedding of rows of `width` whose positions repeat
/// every `positions` rows (x [..., T, E]).
void rope(cudaStream_t s, const float *x, int64_t first, float theta,
          const RopeScaling *scaling, bool inverse, float *y, int64_t rows,
          int64_t positions, int64_t width);
/// RMS normalization over rows of `width`; rstd (one per row) is kept.
void rmsNorm(cudaStream_t s, const float *x, const float *weight, float eps,
             float *y, float *rstd, int64_t rows, int64_t width);
/// dweight is a sum over rows (ColumnSums.h), with
/// columnSumScratch(rows, width, 1) floats of `partials`.
void rmsNormGrad(cudaStream_t s, const float *x, const float *weight,
                 const float *rstd, const float *dy, float *dx, float *dweight,
                 int64_t rows, int64_t width, float *partials);

/// ids (i32, or i64 when `wide`) index rows of table [vocab, width].
void embedding(cudaStream_t s, const float *table, const void *ids, bool wide,
               float *out, int64_t count, int64_t vocab, int64_t width,
               DataError *error);
/// dtable must be zeroed first; rows are summed with atomics.
void embeddingGrad(cudaStream_t s, const void *ids, bool wide,
                   const float *dout, float *dtable, int64_t count,
                   int64_t vocab, int64_t width, DataError *error);

/// Logits f32, or bf16 (uint16_t: amp's storage, widened as they are
/// loaded); the loss and the gradients f32.
template <typename T>
void crossEntropy(cudaStream_t s, const T *logits, const void *labels,
                  bool wide, float *loss, int64_t rows, int64_t classes,
                  DataError *error);
template <typename T>
void crossEntropyGrad(cudaStream_t s, const T *logits, const void *labels,
                      bool wide, const float *dloss, float *dlogits,
                      int64_t rows, int64_t classes, DataError *error);

/// crossEntropyGrad's gradient of `rows` rows of `classes` logits, never
/// stored in f32: rounded to bf16 into `rounded`, and summed into `sum`
/// over the rows of its [rows * classes / width, width] view, in
/// roundAndSumRows's order (the same bits as the two kernels). `lse`
/// holds `rows` floats of scratch, `partials`
/// columnSumScratch(rows * classes / width, width, 1).
template <typename T>
void crossEntropyGradRounded(cudaStream_t s, const T *logits,
                             const void *labels, bool wide, const float *dloss,
                             float *lse, void *rounded, float *sum,
                             int64_t rows, int64_t classes, int64_t width,
                             float *partials, DataError *error);

/// For each of `kept` outputs (`walk.part`), op over the `count` elements of
/// x (`walk.full`, contiguous) that map to it.
void reduce(cudaStream_t s, int op, const float *x, float *out,
            const Walk &walk, int64_t kept, int64_t count);
/// dx from dout: sum and mean spread dout (over count for mean); max sends
/// it to the first maximum only. dx is written whole.
void reduceGrad(cudaStream_t s, int op, const float *x, const float *dout,
                float *dx, const Walk &walk, int64_t kept, int64_t count);

// The optimizers' scalars come by value, or, where `live` is given, from
// device memory a captured step refreshes before each replay
// (runtime/core/StepCapture.h): the learning rate and Adam's bias
// corrections change from step to step.

/// SGD's scalars as its kernel takes them.
struct SgdScalars {
  float lr, momentum, weightDecay;
};
/// p -= lr * (v = momentum * v + g + wd * p); velocity null when momentum 0.
void sgdStep(cudaStream_t s, float *p, const float *g, float *velocity,
             int64_t n, const SgdScalars &a, const SgdScalars *live);
/// Adam's scalars as its kernels take them; c1 and c2 are the bias
/// corrections 1 - beta^step.
struct AdamScalars {
  float lr, beta1, beta2, eps, weightDecay;
  bool decoupled;
  float c1, c2;
};
void adamStep(cudaStream_t s, float *p, const float *g, float *m, float *v,
              int64_t n, const AdamScalars &a, const AdamScalars *live);

/// The blocks a sum of squares runs on: a fixed number, so every run adds
/// in the same order.
constexpr int kSquareBlocks = 256;
void sumPartials(cudaStream_t s, const double *partials, double *out);
void scale(cudaStream_t s, float *x, int64_t n, float factor);

// Multi-tensor launches (MultiTensorPlan.h): one per kMultiTensors
// tensors, each tensor's work as the one-tensor kernel's.

/// One parameter's Adam update.
struct AdamTensor {
  float *p;
  const float *g;
  float *m, *v;
  int64_t n;
};
void adamSteps(cudaStream_t s, const std::vector<AdamTensor> &tensors,
               const AdamScalars &a, const AdamScalars *live);
/// partials[b] += the sum of squares of block b's share of each of xs in
/// turn, in double, in a launch per kMultiTensors of them: the same bits
/// every run, however the tensors fall into launches.
void sumSquaresPartials(
    cudaStream_t s, const std::vector<std::pair<const float *, int64_t>> &xs,
    double *partials);
/// From the partials, as sumPartials adds them: *norm = the square root
/// of their sum, and *factor = maxNorm / norm where the norm is above
/// maxNorm (and not 0), else 1: the host's clipping rule, on the device.
void clipFactor(cudaStream_t s, const double *partials, double maxNorm,
                double *norm, float *factor);
/// Each of xs times *factor (read on the device); nothing is written
/// where it is 1.
void scaleBy(cudaStream_t s, const std::vector<std::pair<float *, int64_t>> &xs,
             const float *factor);
/// out (n bf16 values) = x rounded to nearest, ties to even (amp).
void castToBf16(cudaStream_t s, const float *x, void *out, int64_t n);
/// out (n floats) = x (n bf16 values), exactly.
void castFromBf16(cudaStream_t s, const void *x, float *out, int64_t n);
/// *flag = 1 if any element is not finite (flag zeroed by the caller).
void findNonFinite(cudaStream_t s, const float *x, int64_t n, int *flag);

} // namespace whale::rt::cuda

#endif
