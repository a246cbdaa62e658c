//===- Device.h - where tensors live and kernels run -------------*- C++
//-*-===//
//
// The C ABI checks every argument once, then asks the context's device to do
// the work. A device owns its memory (an Allocator with the device's limit)
// and runs one kernel per whale op and its gradient on f32 views of that
// memory. The CPU device is built in (runtime/cpu/CpuDevice.h); the CUDA
// device comes from a plugin loaded only where a GPU is (runtime/cuda/).
//
// Views hold the device's own pointers: on a GPU they are not the host's to
// read, so host code goes through copyToHost / copyFromHost (or
// capi::HostData) and never dereferences a view itself.
//
// Kernels return a Status: a GPU can fail where a CPU cannot (a launch, an
// out-of-memory inside cuBLAS), and ops that read data which may be out of
// range (ids, labels) report it.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_CORE_DEVICE_H
#define WHALE_RUNTIME_CORE_DEVICE_H

#include "runtime/core/Allocator.h"
#include "runtime/core/Status.h"
#include "runtime/core/StepCapture.h"
#include "runtime/core/Tensor.h"
#include "runtime/ops/DropoutMath.h"
#include "runtime/ops/MoeMath.h"
#include "runtime/ops/RopeFrequencies.h"
#include "runtime/ops/TopKMath.h"
#include "support/ConvMath.h"

#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace whale::rt {

enum class BinaryOp { Add, Sub, Mul, Div };
enum class UnaryOp { Neg, Relu, Gelu, Tanh, Exp, Log, Sqrt };
enum class ReduceOp { Sum, Mean, Max };

/// Ids or labels: i32 or i64, on the device.
struct IndexView {
  const void *data = nullptr;
  Shape shape;
  bool wide = false; ///< i64 when true, i32 otherwise
  int64_t numel() const { return numElements(shape); }
};

/// Optimizer hyper-parameters as one step applies them: the learning rate
/// is `lr * lrScale`. `scheduled` says the step and the scale are the
/// context's train state (whale_rt_set_train_state) rather than the
/// program's constants, so a captured step (StepCapture.h) takes them
/// afresh at each replay.
struct SgdParams {
  double lr = 0, momentum = 0, weightDecay = 0;
  double lrScale = 1;
  bool scheduled = false;
  double rate() const { return lr * lrScale; }
  SgdParams at(const TrainState &s) const {
    SgdParams q = *this;
    q.lrScale = s.lrScale;
    return q;
  }
};
struct AdamParams {
  int64_t step = 1;
  double lr = 0, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weightDecay = 0;
  bool decoupled = false;
  double lrScale = 1;
  bool scheduled = false;
  double rate() const { return lr * lrScale; }
  AdamParams at(const TrainState &s) const {
    AdamParams q = *this;
    q.step = s.step;
    q.lrScale = s.lrScale;
    return q;
  }
};

/// What a matmul's inputs are rounded to before the GEMM: fp32 itself, or
/// bf16 (amp = "bf16": bf16 products accumulated in fp32, while parameters,
/// gradients and optimizer state stay fp32).
enum class MatmulPrecision { F32, BF16 };

/// A matmul's result (or gradient) under amp's storage: bf16 bits, rounded
/// once from the fp32 accumulation, or that fp32 accumulation itself (a
/// weight's gradient, logits read by an fp32 loss).
struct MixedOut {
  void *data = nullptr;
  DType dtype = DType::F32; ///< F32 or BF16
  Shape shape;
};

/// An operand stored either way under amp's storage (a GELU's kept
/// preactivation): f32, or bf16 bits.
struct MixedIn {
  const void *data = nullptr;
  DType dtype = DType::F32; ///< F32 or BF16
  Shape shape;
};

/// What an attention computes besides its operands: the mask, and where a
/// head's rows lie (runtime/ops/AttentionShape.h).
struct AttentionForm {
  bool causal = false;
  bool sequenceMajor = false; ///< [..., T, H, E] rather than [..., T, E]
};

class Device {
public:
  Device(std::string name, std::unique_ptr<Allocator> allocator)
      : name_(std::move(name)), allocator_(std::move(allocator)) {}
  virtual ~Device() = default;

  /// Binds the device's own worker threads (a CPU's pool) to cpus[1..];
  /// cpus[0] is the thread that drives it, which its driver binds
  /// (CpuPlacement.h). A device without workers has nothing to bind.
  virtual bool pinWorkers(const std::vector<int> &cpus) { return true; }
  /// The calling thread drives the device from now on
  /// (whale_rt_context_enter): a CPU device whose time the kernel limits
  /// (cpu:N@share=S) puts that thread under the limit too. By default
  /// nothing.
  virtual Status enterFromThisThread() { return Status::ok(); }
  /// A CPU device under a share of its cores' time: the share the kernel
  /// enforces now and its group's directory (CpuShare::enforced); 1 and ""
  /// for a device without one.
  virtual double enforcedShare(std::string &group) const {
    group.clear();
    return 1;
  }
  Device(const Device &) = delete;
  Device &operator=(const Device &) = delete;

  const std::string &name() const { return name_; }
  Allocator &allocator() { return *allocator_; }

  void setMatmulPrecision(MatmulPrecision p) { matmulPrecision_ = p; }
  MatmulPrecision matmulPrecision() const { return matmulPrecision_; }

  /// True when host code may read and write tensor memory directly.
  virtual bool hostAddressable() const = 0;
  virtual Status copyToHost(void *host, const void *src, int64_t bytes) = 0;
  virtual Status copyFromHost(void *dst, const void *host, int64_t bytes) = 0;
  virtual Status copy(void *dst, const void *src, int64_t bytes) = 0;

  /// Every element of `n` at `data` set to `value` converted to `dtype`.
  virtual Status fill(void *data, DType dtype, int64_t n, double value) = 0;

  /// amp's storage: `out` holds the bf16 bits of x rounded to nearest, ties
  /// to even (NaN stays NaN, infinities stay); fromBf16 widens exactly.
  virtual Status toBf16(View<const float> x, View<uint16_t> out) = 0;
  virtual Status fromBf16(View<const uint16_t> x, View<float> out) = 0;

  // Linear algebra: out = op(a) @ op(b), batched as whale.matmul defines it.
  virtual Status matmul(View<const float> a, View<const float> b,
                        View<float> out, bool transA, bool transB) = 0;
  /// da, db may be null to skip them; db is summed over the batch when b is
  /// shared.
  virtual Status matmulBackward(View<const float> a, View<const float> b,
                                View<const float> dout, View<float> *da,
                                View<float> *db, bool transA, bool transB) = 0;

  /// The same on amp's storage: a, b (and dout) bf16, their products
  /// accumulated in fp32, each result f32 or rounded once to bf16. The
  /// default widens the operands into scratch tensors and runs the fp32
  /// kernels above, which a device with bf16 GEMMs overrides
  /// (runtime/ops/ComposedBf16Matmul.cpp).
  virtual Status matmulBf16(View<const uint16_t> a, View<const uint16_t> b,
                            MixedOut out, bool transA, bool transB);
  virtual Status matmulBf16Backward(View<const uint16_t> a,
                                    View<const uint16_t> b,
                                    View<const uint16_t> dout, MixedOut *da,
                                    MixedOut *db, bool transA, bool transB);

  /// A linear layer's forward as one op: out = x w + bias (w [N, K] when
  /// transposed; bias [N]), then the tanh GELU when `gelu`, with the sum
  /// before it in `pre` where not null (only with `gelu`). The default
  /// composes matmul, binary and unary (runtime/ops/ComposedLinear.cpp); a
  /// GPU applies bias and GELU in its GEMM's epilogue.
  virtual Status linear(View<const float> x, View<const float> w,
                        View<const float> bias, View<float> out,
                        View<float> *pre, bool transW, bool gelu);
  /// Its weight and bias gradients from `dout`: dw (w's shape, [N, K] when
  /// transposed) the product of x and dout over every row, dbias [N] dout
  /// summed over every row. The default composes matmulBackward and
  /// binaryBackward; a GPU sums dbias in the weight GEMM's epilogue.
  virtual Status linearWeightGrad(View<const float> x, View<const float> dout,
                                  View<float> dw, View<float> dbias,
                                  bool transW);
  /// amp's storage of an activation gradient x [..., N] (f32) that a bias
  /// gradient also reads: `rounded` is toBf16's rounding of x, `sum` (x's
  /// last dimensions) is x summed over the rest, in binaryBackward's order
  /// for a bias added to every row, so the bits are those two calls'. The
  /// default makes the two calls; a GPU reads x once for both.
  virtual Status roundAndSum(View<const float> x, View<uint16_t> rounded,
                             View<float> sum);
  /// The gradient through gelu(pre) w: dpre = gelu'(pre) (dout w^T). The
  /// default composes matmulBackward and unaryBackward in place; a GPU
  /// applies the derivative in the GEMM's epilogue.
  virtual Status geluMatmulGrad(View<const float> pre, View<const float> w,
                                View<const float> dout, View<float> dpre,
                                bool transW);

  /// The three on amp's storage (runtime/ops/ComposedBf16Linear.cpp): the
  /// product's operands bf16 and summed in fp32, as matmulBf16 sums them.
  /// linearBf16's sum is never rounded before the bias and the GELU; `out`
  /// is f32 or rounded once to bf16, `pre` f32 or out's type.
  /// linearWeightGradBf16's dw and dbias are f32, dbias the sum of the bf16
  /// dout the weight's GEMM reads. geluMatmulGradBf16 reads `pre` as it is
  /// stored and stores `dpre` in pre's type. The defaults compose
  /// matmulBf16 and the fp32 kernels above; a GPU runs one cuBLASLt GEMM.
  virtual Status linearBf16(View<const uint16_t> x, View<const uint16_t> w,
                            View<const float> bias, MixedOut out, MixedOut *pre,
                            bool transW, bool gelu);
  virtual Status linearWeightGradBf16(View<const uint16_t> x,
                                      View<const uint16_t> dout, View<float> dw,
                                      View<float> dbias, bool transW);
  virtual Status geluMatmulGradBf16(MixedIn pre, View<const uint16_t> w,
                                    View<const uint16_t> dout, MixedOut dpre,
                                    bool transW);

  // Elementwise, NumPy broadcasting.
  virtual Status binary(BinaryOp op, View<const float> a, View<const float> b,
                        View<float> out) = 0;
  virtual Status binaryBackward(BinaryOp op, View<const float> a,
                                View<const float> b, View<const float> dout,
                                View<float> *da, View<float> *db) = 0;
  virtual Status unary(UnaryOp op, View<const float> x, View<float> out) = 0;
  virtual Status unaryBackward(UnaryOp op, View<const float> x,
                               View<const float> y, View<const float> dy,
                               View<float> dx) = 0;
  virtual Status causalMask(View<const float> x, View<float> out) = 0;
  virtual Status causalMaskBackward(View<const float> dy, View<float> dx) = 0;
  virtual Status broadcastTo(View<const float> x, View<float> out) = 0;

  // Normalization and losses. Backward passes recompute what they need from
  // the forward inputs (statistics, log-sum-exp), as the C ABI promises.
  virtual Status softmax(View<const float> x, int64_t axis, View<float> y) = 0;
  virtual Status softmaxBackward(View<const float> y, View<const float> dy,
                                 int64_t axis, View<float> dx) = 0;
  virtual Status layerNorm(View<const float> x, View<const float> gamma,
                           View<const float> beta, double eps,
                           View<float> y) = 0;
  virtual Status layerNormBackward(View<const float> x, View<const float> gamma,
                                   double eps, View<const float> dy,
                                   View<float> dx, View<float> dgamma,
                                   View<float> dbeta) = 0;
  /// Rotary position embedding of x [..., T, E]: each position t turns the
  /// pairs (i, i + E/2) of its row by t * inv_freq[i] (ops/RopeFrequencies.h,
  /// rescaled where `scaling` is given); backwards with `inverse`. Row t of
  /// T is position first + t.
  virtual Status rope(View<const float> x, int64_t first, double theta,
                      const RopeScaling *scaling, bool inverse,
                      View<float> y) = 0;
  /// RMS normalization over the last dimension: y = x * rstd * weight with
  /// rstd = 1 / sqrt(mean(x * x) + eps) per row; its backward recomputes
  /// rstd from x.
  virtual Status rmsNorm(View<const float> x, View<const float> weight,
                         double eps, View<float> y) = 0;
  /// The same with dx = residual + the input's gradient (whale.rms_norm_grad's
  /// `plus`, as layerNormBackwardResidual). By default the two calls.
  virtual Status rmsNormBackwardResidual(View<const float> x,
                                         View<const float> weight, double eps,
                                         View<const float> dy,
                                         View<const float> residual,
                                         View<float> dx, View<float> dweight) {
    if (Status st = rmsNormBackward(x, weight, eps, dy, dx, dweight); !st)
      return st;
    return binary(BinaryOp::Add, residual, View<const float>{dx.data, dx.shape},
                  dx);
  }
  virtual Status rmsNormBackward(View<const float> x, View<const float> weight,
                                 double eps, View<const float> dy,
                                 View<float> dx, View<float> dweight) = 0;
  /// The same with dx = residual + the input's gradient: where the
  /// normalized value also fed a residual sum, whose gradient adds here
  /// (whale.layernorm_grad's `plus`). By default the two calls, the sum
  /// `residual + dx` in that order.
  virtual Status layerNormBackwardResidual(View<const float> x,
                                           View<const float> gamma, double eps,
                                           View<const float> dy,
                                           View<const float> residual,
                                           View<float> dx, View<float> dgamma,
                                           View<float> dbeta) {
    if (Status st = layerNormBackward(x, gamma, eps, dy, dx, dgamma, dbeta);
        !st)
      return st;
    return binary(BinaryOp::Add, residual, View<const float>{dx.data, dx.shape},
                  dx);
  }
  // Batch normalization's passes over x [N, C, S...] (S: the positions
  // after the channel), per channel c. The per-channel vectors are host
  // arrays of C floats: the statistics are combined on the host, where the
  // replicas' sums meet.
  /// sums[c] = the sum of channel c's elements, or of their squares about
  /// center[c] when `center` is given.
  virtual Status channelSums(View<const float> x, const float *center,
                             float *sums) = 0;
  /// y = (x - center[c]) x scale[c] + shift[c].
  virtual Status channelAffine(View<const float> x, const float *center,
                               const float *scale, const float *shift,
                               View<float> y) = 0;
  /// sums[c] = sum(dy), sums[C + c] = sum(dy x (x - center[c]) x
  /// invstd[c]).
  virtual Status channelGradSums(View<const float> x, View<const float> dy,
                                 const float *center, const float *invstd,
                                 float *sums) = 0;
  /// dx = a[c] x dy + b[c] x (x - center[c]) + d[c].
  virtual Status channelGradInput(View<const float> x, View<const float> dy,
                                  const float *center, const float *a,
                                  const float *b, const float *d,
                                  View<float> dx) = 0;
  /// A kernel generated for a fused region
  /// (lowering/Transforms/Fusion/FusedKernel.h): the data addresses of its
  /// inputs then its results, and a range of rows.
  using FusedKernel = void (*)(void **data, int64_t lo, int64_t hi);
  /// A fused region's code: the kernel generated for the host, and the
  /// region as an element program (runtime/ops/ElementProgram.h) for devices
  /// whose memory the host does not address; either may be missing.
  struct FusedCode {
    FusedKernel kernel = nullptr;
    const int64_t *program = nullptr;
    int64_t programWords = 0;
    int inputs = 0, outputs = 0; ///< the addresses `data` holds
    /// Each operand's elements, inputs then outputs.
    const int64_t *elements = nullptr;
  };
  /// Runs a fused region over `rows` rows of `rowElements` elements each,
  /// `data` the addresses of its inputs then its results. The kernels are
  /// host code: this default runs them in one call where the host
  /// addresses the device's memory, and refuses elsewhere.
  /// (Defined here, so that the CUDA plugin, which carries its own copy of
  /// the base, needs no file more.)
  virtual Status fused(const FusedCode &code, void **data, int64_t rows,
                       int64_t rowElements) {
    (void)rowElements;
    if (!hostAddressable())
      return Status::invalid("fused regions run on devices whose memory the "
                             "host addresses; this device's is not");
    if (!code.kernel)
      return Status::invalid("a fused region has no kernel for the host");
    code.kernel(data, 0, rows);
    return Status::ok();
  }
  /// Attention over the last two dimensions of q, k, v ([..., T, E]), or
  /// over T of sequence-major ones ([..., T, H, E]): out = softmax(q k^T *
  /// scale, causally masked when `form.causal`) v, in q's layout. The
  /// default composes this device's own ops (and holds the [..., T, T]
  /// scores); a device overrides it with a kernel that never makes them.
  virtual Status attention(View<const float> q, View<const float> k,
                           View<const float> v, double scale,
                           AttentionForm form, View<float> out);
  /// A decoding step's attention (whale.kv_attention): q [B, H, N, E] at
  /// positions first .. first + N - 1 over the cache [B, Hk, W, E] that
  /// already holds their keys and values, each row causally. By default on
  /// the host (ops/KvAttention.cpp), copying where the device's memory is
  /// not the host's; a CPU splits the heads over its threads.
  virtual Status kvAttention(View<const float> q, View<const float> keys,
                             View<const float> values, int64_t first,
                             double scale, View<float> out);
  /// dq, dk, dv of attention from its inputs, its output and dout
  /// (recomputing the probabilities, as the C ABI's backward passes do).
  virtual Status attentionBackward(View<const float> q, View<const float> k,
                                   View<const float> v, View<const float> out,
                                   View<const float> dout, double scale,
                                   AttentionForm form, View<float> dq,
                                   View<float> dk, View<float> dv);
  /// The two on amp's storage: q, k, v (and the forward's output) bf16,
  /// computed as attention computes on their values, `out` f32 or rounded
  /// once to bf16; dout and the gradients fp32 (a gradient GEMM's result,
  /// which the biases' gradients sum). The defaults widen into scratch
  /// tensors and run the fp32 ops above
  /// (runtime/ops/ComposedBf16Attention.cpp); a GPU's flash kernels read
  /// the bf16 operands as they are stored.
  virtual Status attentionBf16(View<const uint16_t> q, View<const uint16_t> k,
                               View<const uint16_t> v, double scale,
                               AttentionForm form, MixedOut out);
  virtual Status attentionBackwardBf16(
      View<const uint16_t> q, View<const uint16_t> k, View<const uint16_t> v,
      View<const uint16_t> out, View<const float> dout, double scale,
      AttentionForm form, View<float> dq, View<float> dk, View<float> dv);
  /// Fail on an id outside the table's rows.
  virtual Status embedding(View<const float> table, IndexView ids,
                           View<float> out) = 0;
  virtual Status embeddingBackward(IndexView ids, View<const float> dout,
                                   View<float> dtable) = 0;
  /// Fail on a label outside [0, classes).
  virtual Status crossEntropy(View<const float> logits, IndexView labels,
                              View<float> loss) = 0;
  virtual Status crossEntropyBackward(View<const float> logits,
                                      IndexView labels, View<const float> dloss,
                                      View<float> dlogits) = 0;
  /// The same on logits stored in bf16 (amp's storage), computed in fp32;
  /// the loss, dloss and dlogits f32. By default composed: the logits
  /// widened into fp32 scratch, then the fp32 ops
  /// (runtime/ops/ComposedBf16CrossEntropy.cpp); a GPU's kernels widen
  /// each logit as they load it.
  virtual Status crossEntropyBf16(View<const uint16_t> logits, IndexView labels,
                                  View<float> loss);
  virtual Status crossEntropyBackwardBf16(View<const uint16_t> logits,
                                          IndexView labels,
                                          View<const float> dloss,
                                          View<float> dlogits);
  /// The gradient of either (logits f32 or bf16) as roundAndSum gives it:
  /// `rounded` its bf16 rounding, `sum` its sum over the rows, the f32
  /// gradient not stored. The default computes it into fp32 scratch and
  /// calls roundAndSum; a GPU computes each element where it rounds and
  /// adds it, in roundAndSum's order.
  virtual Status crossEntropyBackwardRounded(MixedIn logits, IndexView labels,
                                             View<const float> dloss,
                                             View<uint16_t> rounded,
                                             View<float> sum);

  // Reductions over sorted, distinct axes.
  virtual Status reduce(ReduceOp op, View<const float> x,
                        const std::vector<int64_t> &axes, View<float> out) = 0;
  virtual Status reduceBackward(ReduceOp op, View<const float> x,
                                const std::vector<int64_t> &axes,
                                View<const float> dout, View<float> dx) = 0;

  /// The k first entries of each last-dimension row of x in the top-k
  /// order of runtime/ops/TopKMath.h: their values [..., k] and positions
  /// [..., k] (either may be null).
  virtual Status topk(View<const float> x, int64_t k, float *values,
                      int32_t *positions) = 0;
  /// dx: dy [..., k] back at the positions topk took, zero elsewhere.
  virtual Status topkBackward(View<const float> x, int64_t k,
                              View<const float> dy, View<float> dx) = 0;

  // A mixture of experts' routing (runtime/ops/MoeMath.h) of tokens [G, S, D]
  // by their choices `experts` [G, S, k] into slots [E, G * C, D] and back.
  // `gates` [G, S, k] weigh each choice (a weight of one where null). Fail
  // on a choice outside [0, E).
  virtual Status moeDispatch(const MoeShape &m, const float *tokens,
                             const int32_t *experts, const float *gates,
                             float *slotted) = 0;
  virtual Status moeCombine(const MoeShape &m, const float *slotted,
                            const int32_t *experts, const float *gates,
                            float *tokens) = 0;
  /// dgates [G, S, k]: each kept choice's dot product of its token's row
  /// with its slot's row, zero for a dropped one.
  virtual Status moeGateGrad(const MoeShape &m, const float *tokens,
                             const float *slotted, const int32_t *experts,
                             float *dgates) = 0;
  /// y = x x scale where `draw` keeps the element, 0 elsewhere, for x
  /// [N, ...]: element j of row n is element (firstRow + n) x (x's elements
  /// a row) + j of the global batch (runtime/ops/DropoutMath.h).
  virtual Status dropout(View<const float> x, const DropoutDraw &draw,
                         int64_t firstRow, float scale, View<float> y) = 0;
  /// out [count, classes]: a one at each id, zeros elsewhere; fail on an id
  /// outside [0, classes).
  virtual Status oneHot(const int32_t *ids, int64_t count, int64_t classes,
                        float *out) = 0;

  // Convolutions and pooling over the last two dimensions of NCHW tensors.
  /// The im2col matrix [C * KH * KW, OH * OW] of one sample's planes `x`
  /// [C, H, W] under window `w`, its rows `rowStride` floats apart from
  /// `cols` (several samples' matrices side by side make one GEMM).
  virtual Status im2col(View<const float> x, const Window2d &w, float *cols,
                        int64_t rowStride) = 0;
  /// Its adjoint: `dx` [C, H, W] from `cols` (rows `rowStride` apart), each
  /// input element the sum of the entries im2col took from it.
  virtual Status col2im(const float *cols, int64_t rowStride,
                        const Window2d &w, View<float> dx) = 0;
  /// y [N, O, OH, OW] = x [N, C, H, W] convolved with w [O, C / groups, KH,
  /// KW] (cross-correlation, as deep-learning frameworks define it). The
  /// default composes im2col and this device's batched matmul (the groups
  /// as its batch), sample by sample; `win` gives stride, padding and
  /// dilation, the kernel's extent comes from `w`.
  virtual Status conv2d(View<const float> x, View<const float> w,
                        const Window2d &win, int64_t groups, View<float> y);
  /// dx and dw (either may be null) of conv2d from its inputs and dy.
  virtual Status conv2dBackward(View<const float> x, View<const float> w,
                                View<const float> dy, const Window2d &win,
                                int64_t groups, View<float> *dx,
                                View<float> *dw);
  /// Max or average pooling of every plane of x [..., H, W].
  virtual Status pool2d(bool max, View<const float> x, const Window2d &w,
                        View<float> y) = 0;
  virtual Status pool2dBackward(bool max, View<const float> x,
                                View<const float> dy, const Window2d &w,
                                View<float> dx) = 0;

  // Layout.
  virtual Status transpose(View<const float> x,
                           const std::vector<int64_t> &perm,
                           View<float> out) = 0;
  /// `elementBytes` wide elements (f32 activations, i32 token ids).
  virtual Status slice(const void *x, const Shape &xShape, int64_t elementBytes,
                       int64_t axis, int64_t start, int64_t end, void *out) = 0;
  virtual Status sliceBackward(View<const float> dout, int64_t axis,
                               int64_t start, View<float> dx) = 0;
  virtual Status concat(const std::vector<View<const float>> &inputs,
                        int64_t axis, View<float> out) = 0;

  // Optimizers. `velocity` may be null when momentum is 0.
  virtual Status sgdStep(View<float> param, View<const float> grad,
                         float *velocity, const SgdParams &p) = 0;
  virtual Status adamStep(View<float> param, View<const float> grad, float *m,
                          float *v, const AdamParams &p) = 0;
  /// One parameter's share of a batch of Adam updates.
  struct AdamSlot {
    View<float> param;
    View<const float> grad;
    float *m, *v;
  };
  /// Adam's update of every slot with the same hyperparameters: each as
  /// adamStep, exactly. A GPU runs many parameters in one launch; the
  /// default runs them one by one.
  virtual Status adamSteps(const std::vector<AdamSlot> &slots,
                           const AdamParams &p) {
    for (const AdamSlot &s : slots)
      if (Status st = adamStep(s.param, s.grad, s.m, s.v, p); !st)
        return st;
    return Status::ok();
  }
  /// The sum of the squares of every element of every view.
  virtual Status sumSquares(const std::vector<View<float>> &views,
                            double &out) = 0;
  /// Every element of every view times `factor`.
  virtual Status scale(const std::vector<View<float>> &views,
                       double factor) = 0;
  /// Scales the views together so their global L2 norm is at most
  /// maxNorm: as sumSquares, then scale by maxNorm / norm where the norm
  /// is above it. A GPU does it without the host waiting for the norm (a
  /// step with no host round trip can be captured as one CUDA graph); the
  /// default reads the norm back.
  virtual Status clipNorm(const std::vector<View<float>> &views,
                          double maxNorm) {
    double squares = 0;
    if (Status st = sumSquares(views, squares); !st)
      return st;
    return scaleToNorm(views, squares, maxNorm);
  }
  /// Clipping's rule, given the views' sum of squares (with any other
  /// ranks'): scaled by maxNorm / norm where the norm is above maxNorm.
  Status scaleToNorm(const std::vector<View<float>> &views, double squares,
                     double maxNorm) {
    double norm = std::sqrt(squares);
    if (norm > maxNorm && norm > 0)
      return scale(views, maxNorm / norm);
    return Status::ok();
  }
  /// Whether every element is finite (tracing's NaN check).
  virtual Status allFinite(View<const float> x, bool &finite) = 0;

  /// How this device holds a train step to replay it, or null: it runs
  /// each op as it is called (the CPU).
  virtual StepCapture *stepCapture() { return nullptr; }

  // Collectives between devices' own memories (NCCL on GPUs). A group uses
  // them only when every member has them, each on a device of its own; the
  // host communicator serves every other group.

  /// The physical device NCCL would know this one by, or -1: none.
  virtual int collectiveDevice() const { return -1; }
  /// What a device collective does with a bucket of floats laid out as
  /// `parts` (elements per member, member after member; Communicator's
  /// reduceToOwners and gatherFromOwners say the same).
  enum class BucketOp {
    AllReduce,        ///< every element summed on every member
    ReduceToOwners,   ///< member k's part summed on member k alone
    GatherFromOwners, ///< member k's part copied from it to every other
    /// The bucket is twice `parts`: this member's part k of the first half
    /// goes to member k, which receives it as its part j (this member's
    /// position) of the second half.
    AllToAll,
  };
  /// Runs `op` in place on the bucket at `data` (this device's memory)
  /// over the group `key` of `size` ranks, this one at `position`. The
  /// first call of a group sets it up: `shareFromFirst` hands `bytes` from
  /// position 0 to every member over the host communicator.
  using ShareFromFirst = std::function<Status(char *bytes, int64_t count)>;
  virtual Status bucketCollective(BucketOp op, const std::string &key,
                                  int position, int size, float *data,
                                  const std::vector<int64_t> &parts,
                                  const ShareFromFirst &shareFromFirst) {
    return Status::internal(name_ + " has no device collectives");
  }
  /// bucketCollective begun beside the device's compute (a communication
  /// stream on a GPU): `ticket` names it for bucketCollectiveWait, after
  /// which the device's later work sees its result. `data` must live
  /// until then. This default runs it at once (ticket 0).
  virtual Status bucketCollectiveStart(BucketOp op, const std::string &key,
                                       int position, int size, float *data,
                                       const std::vector<int64_t> &parts,
                                       const ShareFromFirst &shareFromFirst,
                                       int64_t &ticket) {
    ticket = 0;
    return bucketCollective(op, key, position, size, data, parts,
                            shareFromFirst);
  }
  virtual Status bucketCollectiveWait(int64_t ticket) { return Status::ok(); }

  // Messages between two devices (NCCL's point-to-point on GPUs): a
  // pipeline's sends where both stages' devices have collectives, each of
  // its own. A pair `key` carries one direction: position 0 sends,
  // position 1 receives the messages in the order they were sent. The
  // first call of each side sets the pair up (`shareFromFirst`, as above,
  // from the sender).

  /// Sends `bytes` at `data` (this device's memory) to the pair's receiver
  /// beside the device's compute: the sender's compute never waits for the
  /// receiver, and `data` may be freed or overwritten once this returns.
  virtual Status pairSend(const std::string &key, const void *data,
                          int64_t bytes, const ShareFromFirst &shareFromFirst) {
    return Status::internal(name_ + " has no device collectives");
  }
  /// Receives the pair's next message, of `bytes`, into `data`: the
  /// device's later work sees it.
  virtual Status pairRecv(const std::string &key, void *data, int64_t bytes,
                          const ShareFromFirst &shareFromFirst) {
    return Status::internal(name_ + " has no device collectives");
  }

  // Ranks of one process that share one physical device (two contexts of
  // a GPU, or shares of its SMs): every member's memory is every member's
  // to read, so a group sums with kernels of its own and a message is a
  // block handed over, where NCCL would refuse two ranks on one GPU
  // (runtime/comm/SharedDeviceGroup.h). Whether to take this way is the
  // C ABI's choice: every member bound to the same collectiveDevice() in
  // this process.

  /// The most members a sumMembers job reads or writes.
  static constexpr int kMaxSharedMembers = 16;
  /// Element i of every `to` becomes the sum of element i of every
  /// `from`, added in their order (from[0] + from[1] + ..., in fp32, as the
  /// host communicator adds a group); a single `from` copies.
  struct MemberSum {
    std::vector<const float *> from;
    std::vector<float *> to;
    int64_t count = 0;
  };
  /// Queues the jobs after this device's work so far.
  virtual Status sumMembers(const std::vector<MemberSum> &jobs) {
    return Status::internal(name_ + " has no shared-device collectives");
  }
  /// A marker of the work queued so far (an event on a GPU's compute
  /// stream) in `slot`, 0 or 1, for another member's device to wait on. It
  /// stays valid until this device marks the same slot again; 0 where
  /// work is done as it is queued.
  virtual Status markQueued(int slot, int64_t &marker) {
    marker = 0;
    return Status::ok();
  }
  /// Makes this device's later work wait for another member's marker.
  virtual Status waitMarker(int64_t marker) { return Status::ok(); }
  /// A message for a member sharing the device: `bytes` at `data` copied
  /// into a block of its own (`block`), ready at `marker`. This device
  /// never waits for the receiver, and `data` may be reused at once.
  virtual Status handOver(const void *data, int64_t bytes, int64_t &block,
                          int64_t &marker) {
    return Status::internal(name_ + " has no shared-device messages");
  }
  /// A handed-over block taken in: its marker waited for, its bytes
  /// copied into `data` (this device's later work sees them), the block
  /// freed once the copy is done.
  virtual Status takeOver(int64_t block, int64_t marker, void *data,
                          int64_t bytes) {
    return Status::internal(name_ + " has no shared-device messages");
  }

private:
  std::string name_;
  std::unique_ptr<Allocator> allocator_;
  MatmulPrecision matmulPrecision_ = MatmulPrecision::F32;
};

} // namespace whale::rt

#endif
