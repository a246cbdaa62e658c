//===- CpuDevice.h - a CPU device: threads, host memory, kernels -*- C++
//-*-===//

#ifndef WHALE_RUNTIME_CPU_CPUDEVICE_H
#define WHALE_RUNTIME_CPU_CPUDEVICE_H

#include "runtime/core/CpuShare.h"
#include "runtime/core/Device.h"
#include "runtime/core/ThreadPool.h"
#include "runtime/cpu/DnnlConv.h"

#include <memory>

namespace whale::rt {

struct CpuDeviceOptions {
  int threads = 1;
  int64_t memoryLimit = 0; // bytes; 0: no limit
  /// The kernel's quota on its threads (cpu:N@share=S: core/CpuShare.h);
  /// null: none.
  std::shared_ptr<CpuShare> share;
};

/// A CPU device: its own thread pool (kernels parallelize over it, GEMM
/// included, since BLAS runs single-threaded inside each chunk) and its own
/// allocator with a memory limit. Its kernels are those of cpu/Kernels.h.
class CpuDevice : public Device {
public:
  CpuDevice(std::string name, CpuDeviceOptions options);
  ~CpuDevice() override;

  ThreadPool &pool() { return pool_; }
  bool pinWorkers(const std::vector<int> &cpus) override {
    return pool_.pinWorkers(cpus);
  }
  /// Under a share, the calling thread joins its group (and leaves it for
  /// a device without one): the driving thread is limited with the pool
  /// (whale_rt_context_enter, by each rank's thread before its step).
  Status enterFromThisThread() override {
    return CpuShare::enter(share_.get());
  }
  /// Puts the pool's workers in the share's group (none: nothing), as the
  /// device opens: its whole compute is under its quota.
  Status joinShare();
  /// The share's group (null: none), for tests and reports.
  const CpuShare *share() const { return share_.get(); }
  double enforcedShare(std::string &group) const override {
    if (!share_)
      return Device::enforcedShare(group);
    group = share_->path();
    return share_->enforced();
  }
  /// x rounded to bf16 into `store` when matmuls run in bf16 (amp), x
  /// itself otherwise: what every product's operands go through.
  View<const float> matmulInput(View<const float> x, std::vector<float> &store);

  bool hostAddressable() const override { return true; }
  Status copyToHost(void *host, const void *src, int64_t bytes) override;
  Status copyFromHost(void *dst, const void *host, int64_t bytes) override;
  Status copy(void *dst, const void *src, int64_t bytes) override;
  Status fill(void *data, DType dtype, int64_t n, double value) override;
  Status toBf16(View<const float> x, View<uint16_t> out) override;
  Status fromBf16(View<const uint16_t> x, View<float> out) override;

  Status matmul(View<const float> a, View<const float> b, View<float> out,
                bool transA, bool transB) override;
  Status matmulBackward(View<const float> a, View<const float> b,
                        View<const float> dout, View<float> *da,
                        View<float> *db, bool transA, bool transB) override;
  Status binary(BinaryOp op, View<const float> a, View<const float> b,
                View<float> out) override;
  Status binaryBackward(BinaryOp op, View<const float> a, View<const float> b,
                        View<const float> dout, View<float> *da,
                        View<float> *db) override;
  Status unary(UnaryOp op, View<const float> x, View<float> out) override;
  Status unaryBackward(UnaryOp op, View<const float> x, View<const float> y,
                       View<const float> dy, View<float> dx) override;
  Status causalMask(View<const float> x, View<float> out) override;
  Status causalMaskBackward(View<const float> dy, View<float> dx) override;
  Status broadcastTo(View<const float> x, View<float> out) override;
  Status topk(View<const float> x, int64_t k, float *values,
              int32_t *positions) override;
  Status topkBackward(View<const float> x, int64_t k, View<const float> dy,
                      View<float> dx) override;
  Status moeDispatch(const MoeShape &m, const float *tokens,
                     const int32_t *experts, const float *gates,
                     float *slotted) override;
  Status moeCombine(const MoeShape &m, const float *slotted,
                    const int32_t *experts, const float *gates,
                    float *tokens) override;
  Status moeGateGrad(const MoeShape &m, const float *tokens,
                     const float *slotted, const int32_t *experts,
                     float *dgates) override;
  Status oneHot(const int32_t *ids, int64_t count, int64_t classes,
                float *out) override;
  Status dropout(View<const float> x, const DropoutDraw &draw,
                 int64_t firstRow, float scale, View<float> y) override;
  Status im2col(View<const float> x, const Window2d &w, float *cols,
                int64_t rowStride) override;
  Status col2im(const float *cols, int64_t rowStride, const Window2d &w,
                View<float> dx) override;
  /// Through oneDNN where it is built in (cpu/DnnlConv.h), else the
  /// composed path (im2col, GEMM, col2im).
  Status conv2d(View<const float> x, View<const float> w, const Window2d &win,
                int64_t groups, View<float> y) override;
  Status conv2dBackward(View<const float> x, View<const float> w,
                        View<const float> dy, const Window2d &win,
                        int64_t groups, View<float> *dx,
                        View<float> *dw) override;
  Status pool2d(bool max, View<const float> x, const Window2d &w,
                View<float> y) override;
  Status pool2dBackward(bool max, View<const float> x, View<const float> dy,
                        const Window2d &w, View<float> dx) override;
  Status fused(const FusedCode &code, void **data, int64_t rows,
               int64_t rowElements) override;
  Status attention(View<const float> q, View<const float> k,
                   View<const float> v, double scale, AttentionForm form,
                   View<float> out) override;
  Status kvAttention(View<const float> q, View<const float> keys,
                     View<const float> values, int64_t first, double scale,
                     View<float> out) override;
  Status attentionBackward(View<const float> q, View<const float> k,
                           View<const float> v, View<const float> out,
                           View<const float> dout, double scale,
                           AttentionForm form, View<float> dq, View<float> dk,
                           View<float> dv) override;
  Status softmax(View<const float> x, int64_t axis, View<float> y) override;
  Status softmaxBackward(View<const float> y, View<const float> dy,
                         int64_t axis, View<float> dx) override;
  Status channelSums(View<const float> x, const float *center,
                     float *sums) override;
  Status channelAffine(View<const float> x, const float *center,
                       const float *scale, const float *shift,
                       View<float> y) override;
  Status channelGradSums(View<const float> x, View<const float> dy,
                         const float *center, const float *invstd,
                         float *sums) override;
  Status channelGradInput(View<const float> x, View<const float> dy,
                          const float *center, const float *a, const float *b,
                          const float *d, View<float> dx) override;
  Status layerNorm(View<const float> x, View<const float> gamma,
                   View<const float> beta, double eps, View<float> y) override;
  Status rope(View<const float> x, int64_t first, double theta,
              const RopeScaling *scaling, bool inverse, View<float> y) override;
  Status rmsNorm(View<const float> x, View<const float> weight, double eps,
                 View<float> y) override;
  Status rmsNormBackward(View<const float> x, View<const float> weight,
                         double eps, View<const float> dy, View<float> dx,
                         View<float> dweight) override;
  Status rmsNormBackwardResidual(View<const float> x, View<const float> weight,
                                 double eps, View<const float> dy,
                                 View<const float> residual, View<float> dx,
                                 View<float> dweight) override;
  Status layerNormBackward(View<const float> x, View<const float> gamma,
                           double eps, View<const float> dy, View<float> dx,
                           View<float> dgamma, View<float> dbeta) override;
  Status embedding(View<const float> table, IndexView ids,
                   View<float> out) override;
  Status embeddingBackward(IndexView ids, View<const float> dout,
                           View<float> dtable) override;
  Status crossEntropy(View<const float> logits, IndexView labels,
                      View<float> loss) override;
  Status crossEntropyBackward(View<const float> logits, IndexView labels,
                              View<const float> dloss,
                              View<float> dlogits) override;
  Status reduce(ReduceOp op, View<const float> x,
                const std::vector<int64_t> &axes, View<float> out) override;
  Status reduceBackward(ReduceOp op, View<const float> x,
                        const std::vector<int64_t> &axes,
                        View<const float> dout, View<float> dx) override;
  Status transpose(View<const float> x, const std::vector<int64_t> &perm,
                   View<float> out) override;
  Status slice(const void *x, const Shape &xShape, int64_t elementBytes,
               int64_t axis, int64_t start, int64_t end, void *out) override;
  Status sliceBackward(View<const float> dout, int64_t axis, int64_t start,
                       View<float> dx) override;
  Status concat(const std::vector<View<const float>> &inputs, int64_t axis,
                View<float> out) override;
  Status sgdStep(View<float> param, View<const float> grad, float *velocity,
                 const SgdParams &p) override;
  Status adamStep(View<float> param, View<const float> grad, float *m, float *v,
                  const AdamParams &p) override;
  Status sumSquares(const std::vector<View<float>> &views,
                    double &out) override;
  Status scale(const std::vector<View<float>> &views, double factor) override;
  Status allFinite(View<const float> x, bool &finite) override;
  /// Ranks sharing a device meet in host memory: sums as the host
  /// communicator adds, messages in blocks of the heap. Taken only where a
  /// device claims to share a physical one (a test's stand-in: a CPU
  /// device has no collectiveDevice()).
  Status sumMembers(const std::vector<MemberSum> &jobs) override;
  Status handOver(const void *data, int64_t bytes, int64_t &block,
                  int64_t &marker) override;
  Status takeOver(int64_t block, int64_t marker, void *data,
                  int64_t bytes) override;

private:
  ThreadPool pool_;
  std::shared_ptr<CpuShare> share_;
  /// oneDNN's convolutions, made on the first one (null without oneDNN).
  std::unique_ptr<DnnlConv> dnnl_;
  DnnlConv *dnnl();
};

} // namespace whale::rt

#endif
