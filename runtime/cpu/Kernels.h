//===- Kernels.h - CPU kernels, forward and backward -------------*- C++
//-*-===//
//
// One function per whale op and its gradient, on contiguous row-major views.
// Shapes are those the whale verifier accepts; kernels that read data which
// can be out of range (ids, labels) check it and return a Status.
//
// Every kernel is a template instantiated for float (training) and double
// (so gradient checks can run against finite differences in double).
// Backward kernels *overwrite* their gradient outputs; accumulation across
// uses is the caller's (the autodiff pass adds gradients explicitly).
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_CPU_KERNELS_H
#define WHALE_RUNTIME_CPU_KERNELS_H

#include "runtime/core/Status.h"
#include "runtime/core/Tensor.h"
#include "runtime/cpu/CpuDevice.h"

#include <functional>

namespace whale::rt::cpu {

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

/// C[M, N] = alpha * op(A) op(B) + beta * C, row-major, with the rows of C
/// split over the device's threads (BLAS itself runs single-threaded).
template <class T>
void gemm(CpuDevice &dev, bool transA, bool transB, int64_t m, int64_t n,
          int64_t k, T alpha, const T *a, int64_t lda, const T *b, int64_t ldb,
          T beta, T *c, int64_t ldc);

/// out = op(a) @ op(b), batched as whale.matmul defines it.
template <class T>
void matmul(CpuDevice &dev, View<const T> a, View<const T> b, View<T> out,
            bool transA, bool transB);
/// Gradients of matmul: da (shape of a) and db (shape of b; summed over the
/// batch when b is shared). Either may be null to skip it.
template <class T>
void matmulBackward(CpuDevice &dev, View<const T> a, View<const T> b,
                    View<const T> dout, View<T> *da, View<T> *db, bool transA,
                    bool transB);

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

using rt::BinaryOp;
using rt::UnaryOp;

/// out = a op b with NumPy broadcasting (out has the broadcast shape).
template <class T>
void binary(CpuDevice &dev, BinaryOp op, View<const T> a, View<const T> b,
            View<T> out);
/// Gradients of binary: each reduced over the dimensions it was broadcast
/// along. Either output may be null.
template <class T>
void binaryBackward(CpuDevice &dev, BinaryOp op, View<const T> a,
                    View<const T> b, View<const T> dout, View<T> *da,
                    View<T> *db);

template <class T>
void unary(CpuDevice &dev, UnaryOp op, View<const T> x, View<T> out);
/// dx from x, the forward output y and dy (each op uses what it needs).
template <class T>
void unaryBackward(CpuDevice &dev, UnaryOp op, View<const T> x, View<const T> y,
                   View<const T> dy, View<T> dx);

/// Sets scores[..., i, j] to -inf where j > i + (S - T).
template <class T>
void causalMask(CpuDevice &dev, View<const T> x, View<T> out);
template <class T>
void causalMaskBackward(CpuDevice &dev, View<const T> dy, View<T> dx);

/// Copies x into the larger `out` by NumPy broadcasting (the gradient of a
/// sum or mean, spread back over the reduced axes).
template <class T>
void broadcastTo(CpuDevice &dev, View<const T> x, View<T> out);

/// Sums `full` (of shape fullShape) into `out`, whose shape broadcasts to
/// fullShape: the gradient of a broadcast.
template <class T>
void reduceToShape(CpuDevice &dev, View<const T> full, View<T> out);

//===----------------------------------------------------------------------===//
// Normalization and losses
//===----------------------------------------------------------------------===//

/// C = alpha op(A) op(B) + beta C on OpenBLAS, row-major, on the calling
/// thread (one BLAS thread per call): for kernels that tile their own
/// products, such as the fused attention.
void blasGemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
              const float *a, int64_t lda, const float *b, int64_t ldb,
              float beta, float *c, int64_t ldc);

template <class T>
void softmax(CpuDevice &dev, View<const T> x, int64_t axis, View<T> y);
template <class T>
void softmaxBackward(CpuDevice &dev, View<const T> y, View<const T> dy,
                     int64_t axis, View<T> dx);

/// Over the last dimension D. `mean` and `rstd` (one per row) are saved for
/// the backward pass.
template <class T>
void layerNorm(CpuDevice &dev, View<const T> x, View<const T> gamma,
               View<const T> beta, double eps, View<T> y, T *mean, T *rstd);
/// layerNorm's mean and rstd alone, the same bits (its backward's need).
template <class T>
void layerNormStatistics(CpuDevice &dev, View<const T> x, double eps, T *mean,
                         T *rstd);
template <class T>
void layerNormBackward(CpuDevice &dev, View<const T> x, View<const T> gamma,
                       const T *mean, const T *rstd, View<const T> dy,
                       View<T> dx, View<T> dgamma, View<T> dbeta);

/// Rotary position embedding of x [..., T, E] (Rope.cpp).
template <class T>
void rope(CpuDevice &dev, View<const T> x, int64_t first, double theta,
          const RopeScaling *scaling, bool inverse, View<T> y);
/// The angles rope turns by, as Hugging Face transformers computes them in
/// f32: cos and sin of t * inv_freq[i] (ops/RopeFrequencies.h) for
/// first <= t < first + positions, i < E/2, row by row.
void ropeTable(int64_t first, int64_t positions, int64_t width, double theta,
               const RopeScaling *scaling, float *cos, float *sin);

/// RMS normalization over the last dimension (RmsNorm.cpp).
template <class T>
void rmsNorm(CpuDevice &dev, View<const T> x, View<const T> weight, double eps,
             View<T> y);
/// dx = residual + the input's gradient where `residual` is given (its
/// data null: none), added as each row's dx is written.
template <class T>
void rmsNormBackward(CpuDevice &dev, View<const T> x, View<const T> weight,
                     double eps, View<const T> dy, View<T> dx, View<T> dweight,
                     const T *residual = nullptr);

/// table [V, D], ids [...] -> out [..., D]. Fails on an id outside [0, V).
template <class T, class I>
Status embedding(CpuDevice &dev, View<const T> table, View<const I> ids,
                 View<T> out);
template <class T, class I>
void embeddingBackward(CpuDevice &dev, View<const I> ids, View<const T> dout,
                       View<T> dtable);

/// logits [..., C], labels [...] -> loss [...]; `lse` (one per sample) is
/// saved for the backward pass. Fails on a label outside [0, C).
template <class T, class I>
Status crossEntropy(CpuDevice &dev, View<const T> logits, View<const I> labels,
                    View<T> loss, T *lse);
template <class T, class I>
void crossEntropyBackward(CpuDevice &dev, View<const T> logits,
                          View<const I> labels, const T *lse,
                          View<const T> dloss, View<T> dlogits);

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

using rt::ReduceOp;

/// Reduces x over the sorted `axes`; `out` has x's shape without them (or
/// with 1s; the data layout is the same). For Max, `argmax` (one per output
/// element, may be null) records which input element won.
template <class T>
void reduce(CpuDevice &dev, ReduceOp op, View<const T> x,
            const std::vector<int64_t> &axes, View<T> out, int64_t *argmax);
template <class T>
void reduceBackward(CpuDevice &dev, ReduceOp op, const Shape &xShape,
                    const std::vector<int64_t> &axes, View<const T> dout,
                    const int64_t *argmax, View<T> dx);

//===----------------------------------------------------------------------===//
// Layout
//===----------------------------------------------------------------------===//

/// out dimension i is x dimension perm[i]. The backward is the transpose by
/// the inverse permutation.
template <class T>
void transpose(CpuDevice &dev, View<const T> x,
               const std::vector<int64_t> &perm, View<T> out);
std::vector<int64_t> inversePermutation(const std::vector<int64_t> &perm);

/// Indices [start, end) of `axis`; the backward writes dout into a zeroed dx.
template <class T>
void slice(CpuDevice &dev, View<const T> x, int64_t axis, int64_t start,
           View<T> out);
template <class T>
void sliceBackward(CpuDevice &dev, View<const T> dout, int64_t axis,
                   int64_t start, View<T> dx);

template <class T>
void concat(CpuDevice &dev, const std::vector<View<const T>> &inputs,
            int64_t axis, View<T> out);
template <class T>
void concatBackward(CpuDevice &dev, View<const T> dout, int64_t axis,
                    std::vector<View<T>> &dinputs);

//===----------------------------------------------------------------------===//
// Optimizers
//===----------------------------------------------------------------------===//

/// p -= lr * (v = momentum * v + g + weightDecay * p). `velocity` may be null
/// when momentum is 0.
template <class T>
void sgdStep(CpuDevice &dev, View<T> param, View<const T> grad, T *velocity,
             double lr, double momentum, double weightDecay);

/// Adam with bias correction; `decoupled` makes it AdamW (weight decay applied
/// to the parameter, not added to the gradient). `step` counts from 1.
template <class T>
void adamStep(CpuDevice &dev, View<T> param, View<const T> grad, T *m, T *v,
              int64_t step, double lr, double beta1, double beta2, double eps,
              double weightDecay, bool decoupled);

/// The sum of the squares of every element, in double and a fixed order.
template <class T> double sumSquares(const std::vector<View<T>> &views);
/// Every element of every view times `factor`.
template <class T>
void scaleAll(CpuDevice &dev, const std::vector<View<T>> &views, T factor);

/// The global L2 norm of the gradients; when it exceeds maxNorm, scales them
/// all by maxNorm / norm. Returns the norm before clipping. When the
/// gradients are spread over ranks, `combineSquares` turns this rank's sum
/// of squares into the sum over all of them.
template <class T>
double
clipGradNorm(CpuDevice &dev, std::vector<View<T>> &grads, double maxNorm,
             const std::function<double(double)> &combineSquares = nullptr);

} // namespace whale::rt::cpu

#endif
