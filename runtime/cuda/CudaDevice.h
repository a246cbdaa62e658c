//===- CudaDevice.h - a CUDA GPU as a whale device ---------------*- C++
//-*-===//
//
// Lives in the plugin (libwhale_cuda.so), never in the CPU build: the
// runtime reaches it through whale_cuda_open_device (DevicePlugin.h) only
// after finding a driver. One stream runs every kernel, cuBLAS call, copy
// and NCCL collective in order (a second, for communication to overlap the
// backward pass, waits for asynchronous collectives in the rank programs).
// Memory comes from a caching allocator held to the device's limit, as the
// CPU's is.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_CUDA_CUDADEVICE_H
#define WHALE_RUNTIME_CUDA_CUDADEVICE_H

#include "runtime/core/Device.h"
#include "runtime/cuda/CudaKernels.h"
#include "runtime/cuda/CudaStepGraph.h"
#include "runtime/cuda/GreenContext.h"
#include "runtime/cuda/LtGemm.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <functional>
#include <initializer_list>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace whale::rt::cuda {

struct GemmBuffers;

/// Device memory from cudaMalloc, kept for reuse as every device's is
/// (runtime/core/Allocator.h): a cached block serves a request without
/// cudaMalloc (a device-wide synchronization). Blocks are used in stream order,
/// so a block freed while a queued kernel still reads it is only reused by
/// later work on the same stream.
class GpuMemory final : public CachingAllocator {
public:
  GpuMemory(std::string device, int64_t limit, int ordinal)
      : CachingAllocator(std::move(device), limit), ordinal(ordinal) {}
  ~GpuMemory() override {
    releaseHeld();
    emptyCache();
  }

protected:
  void *systemAllocate(size_t bytes) override;
  void systemRelease(void *ptr, size_t bytes) override;

private:
  int ordinal;
};

class CudaDevice final : public Device {
public:
  /// Opens GPU `ordinal`, on `sms` of its SMs (0: all of them;
  /// GreenContext.h); on failure returns null with the reason in `error`.
  static std::unique_ptr<CudaDevice> open(const std::string &name, int ordinal,
                                          int sms, int64_t memoryLimit,
                                          std::string &error);
  ~CudaDevice() override;

  bool hostAddressable() const override { return false; }
  Status copyToHost(void *host, const void *src, int64_t bytes) override;
  Status copyFromHost(void *dst, const void *host, int64_t bytes) override;
  Status copy(void *dst, const void *src, int64_t bytes) override;
  Status fill(void *data, DType dtype, int64_t n, double value) override;
  Status toBf16(View<const float> x, View<uint16_t> out) override;
  Status roundAndSum(View<const float> x, View<uint16_t> rounded,
                     View<float> sum) override;
  Status crossEntropyBackwardRounded(MixedIn logits, IndexView labels,
                                     View<const float> dloss,
                                     View<uint16_t> rounded,
                                     View<float> sum) override;
  Status fromBf16(View<const uint16_t> x, View<float> out) override;

  Status matmul(View<const float> a, View<const float> b, View<float> out,
                bool transA, bool transB) override;
  Status matmulBackward(View<const float> a, View<const float> b,
                        View<const float> dout, View<float> *da,
                        View<float> *db, bool transA, bool transB) override;
  Status matmulBf16(View<const uint16_t> a, View<const uint16_t> b,
                    MixedOut out, bool transA, bool transB) override;
  Status matmulBf16Backward(View<const uint16_t> a, View<const uint16_t> b,
                            View<const uint16_t> dout, MixedOut *da,
                            MixedOut *db, bool transA, bool transB) override;
  /// One cuBLASLt GEMM with the bias (and GELU, keeping the sum before it
  /// where `pre` is given) in its epilogue; Device's composition where
  /// cuBLASLt has no algorithm for it.
  Status linear(View<const float> x, View<const float> w,
                View<const float> bias, View<float> out, View<float> *pre,
                bool transW, bool gelu) override;
  Status linearWeightGrad(View<const float> x, View<const float> dout,
                          View<float> dw, View<float> dbias,
                          bool transW) override;
  Status geluMatmulGrad(View<const float> pre, View<const float> w,
                        View<const float> dout, View<float> dpre,
                        bool transW) override;
  /// The same on amp's storage: bf16 operands to the tensor cores as they
  /// are stored, the result in its stored type (a linear layer's fp32
  /// preactivation beside a bf16 output: both stored in fp32 by the GEMM,
  /// the output rounded after it); Device's composition where cuBLASLt has
  /// no algorithm.
  Status linearBf16(View<const uint16_t> x, View<const uint16_t> w,
                    View<const float> bias, MixedOut out, MixedOut *pre,
                    bool transW, bool gelu) override;
  Status linearWeightGradBf16(View<const uint16_t> x, View<const uint16_t> dout,
                              View<float> dw, View<float> dbias,
                              bool transW) override;
  Status geluMatmulGradBf16(MixedIn pre, View<const uint16_t> w,
                            View<const uint16_t> dout, MixedOut dpre,
                            bool transW) override;
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
  Status pool2d(bool max, View<const float> x, const Window2d &w,
                View<float> y) override;
  Status pool2dBackward(bool max, View<const float> x, View<const float> dy,
                        const Window2d &w, View<float> dx) override;
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
  Status layerNormBackward(View<const float> x, View<const float> gamma,
                           double eps, View<const float> dy, View<float> dx,
                           View<float> dgamma, View<float> dbeta) override;
  Status layerNormBackwardResidual(View<const float> x, View<const float> gamma,
                                   double eps, View<const float> dy,
                                   View<const float> residual, View<float> dx,
                                   View<float> dgamma,
                                   View<float> dbeta) override;
  Status embedding(View<const float> table, IndexView ids,
                   View<float> out) override;
  Status embeddingBackward(IndexView ids, View<const float> dout,
                           View<float> dtable) override;
  Status crossEntropy(View<const float> logits, IndexView labels,
                      View<float> loss) override;
  Status crossEntropyBackward(View<const float> logits, IndexView labels,
                              View<const float> dloss,
                              View<float> dlogits) override;
  Status crossEntropyBf16(View<const uint16_t> logits, IndexView labels,
                          View<float> loss) override;
  Status crossEntropyBackwardBf16(View<const uint16_t> logits, IndexView labels,
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
  /// Every slot's update in a launch per kMultiTensors parameters.
  Status adamSteps(const std::vector<AdamSlot> &slots,
                   const AdamParams &p) override;
  Status sumSquares(const std::vector<View<float>> &views,
                    double &out) override;
  Status scale(const std::vector<View<float>> &views, double factor) override;
  /// The norm and the factor stay on the device: the host never waits.
  Status clipNorm(const std::vector<View<float>> &views,
                  double maxNorm) override;
  Status allFinite(View<const float> x, bool &finite) override;
  StepCapture *stepCapture() override { return stepGraph.get(); }
  /// Attention as GEMMs over chunks of heads and row kernels
  /// (AttentionPlan.h).
  Status attention(View<const float> q, View<const float> k,
                   View<const float> v, double scale, AttentionForm form,
                   View<float> out) override;
  Status attentionBackward(View<const float> q, View<const float> k,
                           View<const float> v, View<const float> out,
                           View<const float> dout, double scale,
                           AttentionForm form, View<float> dq, View<float> dk,
                           View<float> dv) override;
  /// amp's storage: the flash kernels on the stored bf16 operands, the
  /// output rounded as the kernel stores it.
  Status attentionBf16(View<const uint16_t> q, View<const uint16_t> k,
                       View<const uint16_t> v, double scale, AttentionForm form,
                       MixedOut out) override;
  Status attentionBackwardBf16(View<const uint16_t> q, View<const uint16_t> k,
                               View<const uint16_t> v, View<const uint16_t> out,
                               View<const float> dout, double scale,
                               AttentionForm form, View<float> dq,
                               View<float> dk, View<float> dv) override;
  /// The region's element program, one kernel for every region; the
  /// generated host kernel is of no use here.
  Status fused(const FusedCode &code, void **data, int64_t rows,
               int64_t rowElements) override;

  /// The GPU's ordinal where NCCL was built in, else -1 (host collectives).
  int collectiveDevice() const override;
  /// ncclAllReduce; one ncclReduce or ncclBroadcast per member's part,
  /// rooted at that member, in one NCCL group; an all-to-all as one
  /// ncclSend and ncclRecv per member, in one group. Every NCCL call runs on the
  /// communication stream, after the compute stream's work so far: a
  /// communicator's calls then keep one order. The blocking form makes the
  /// compute stream wait for it at once; a started one at its wait.
  Status bucketCollective(BucketOp op, const std::string &key, int position,
                          int size, float *data,
                          const std::vector<int64_t> &parts,
                          const ShareFromFirst &shareFromFirst) override;
  Status bucketCollectiveStart(BucketOp op, const std::string &key,
                               int position, int size, float *data,
                               const std::vector<int64_t> &parts,
                               const ShareFromFirst &shareFromFirst,
                               int64_t &ticket) override;
  Status bucketCollectiveWait(int64_t ticket) override;
  /// ncclSend from a copy made on the compute stream (allocated and freed
  /// in stream order), on the pair's own stream: the compute stream never
  /// waits for the receiver, and the sent tensor may be reused at once.
  Status pairSend(const std::string &key, const void *data, int64_t bytes,
                  const ShareFromFirst &shareFromFirst) override;
  /// ncclRecv on the pair's own stream after the compute stream's work so
  /// far (the tensor's earlier users); the compute stream waits for it.
  Status pairRecv(const std::string &key, void *data, int64_t bytes,
                  const ShareFromFirst &shareFromFirst) override;

  /// Ranks of this process on this GPU (SharedDeviceGroup.h): a kernel
  /// per job on the compute stream, reading and writing the members'
  /// buckets directly (one address space: contexts of one GPU and shares
  /// of its SMs keep the primary context's memory).
  Status sumMembers(const std::vector<MemberSum> &jobs) override;
  /// An event of the device's own per slot, recorded on the compute
  /// stream; another member's compute stream waits on it. A captured step
  /// cannot hold either: its graph is this rank's alone.
  Status markQueued(int slot, int64_t &marker) override;
  Status waitMarker(int64_t marker) override;
  /// The copy in a block allocated in the compute stream's order, an event
  /// of its own recorded after it; the receiver's compute stream waits on
  /// the event, copies, destroys the event and frees the block in its own
  /// stream's order.
  Status handOver(const void *data, int64_t bytes, int64_t &block,
                  int64_t &marker) override;
  Status takeOver(int64_t block, int64_t marker, void *data,
                  int64_t bytes) override;

private:
  CudaDevice(const std::string &name, int ordinal, int64_t memoryLimit);
  /// Refuses work another rank's device takes part in while a step is
  /// captured, and notes it while one is probed (`what`).
  Status sharedWork(const char *what);
  cudaEvent_t markers[2] = {nullptr, nullptr};
  /// Makes this GPU the calling thread's (ranks run on threads of their
  /// own, and CUDA's current device is per thread).
  Status enter();
  /// A copy between the host and this GPU, waited for.
  Status copyAndWait(void *dst, const void *src, int64_t bytes, bool toHost);
  /// The status of the last launch on the compute stream, named.
  Status launched(const char *what);
  /// Runs `launch(record)` (a kernel over labels) and reports a label the
  /// kernel found outside [0, classes).
  template <typename Launch> Status labelled(int64_t classes, Launch launch);
  /// Cross entropy and its gradient on logits stored as T (f32 or bf16).
  template <typename T>
  Status crossEntropyOf(View<const T> logits, IndexView labels,
                        View<float> loss);
  template <typename T>
  Status crossEntropyBackwardOf(View<const T> logits, IndexView labels,
                                View<const float> dloss, View<float> dlogits);
  /// A reusable device buffer of at least `bytes` for scratch `slot`
  /// (statistics a backward pass recomputes); not counted against the
  /// limit, as the CPU device's host vectors are not.
  Status scratch(int slot, size_t bytes, void **out);
  /// Scratch for the partials of `outputs` sums over rows
  /// (cuda::columnSumScratch); null where none are needed.
  Status columnScratch(int64_t rows, int64_t width, int outputs,
                       float *&partials);
  /// The views' sum of squares as kSquareBlocks partials in scratch slot
  /// 2 (sumSquaresPartials), with room after them for two doubles.
  Status squaresOnDevice(const std::vector<View<float>> &views,
                         double *&partials);
  /// Probabilities P = softmax(scale Q K^T) of `heads` heads (from q and k,
  /// bf16 under amp) into `scores` [heads, t, tk] (AttentionPlan.h).
  Status attentionScores(const cuda::AttentionDims &d, int64_t heads,
                         const void *q, const void *k, float *scores);
  /// x [N, C, S...] as N, C and S.
  struct ChannelExtents {
    int64_t rows = 0, channels = 0, size = 0;
  };
  /// Enters the device, reads `shape`'s extents into `e`, and uploads the
  /// per-channel host vectors (nullptr: room only) side by side to scratch
  /// slot 0 in one copy, C floats each, at *device.
  Status channelVectors(const Shape &shape,
                        std::initializer_list<const float *> host,
                        ChannelExtents &e, float **device);
  /// Clears a data-error record before a kernel that reads ids or labels
  /// (the device's own, or in a captured step one of the op's), and turns
  /// what it found into a Status after (in a captured step, after each
  /// replay).
  Status clearDataError(DataError **record);
  /// Runs planned GEMMs (GemmPlan.h) on the compute stream: cuBLASLt where
  /// it has an algorithm for the call, cuBLAS's classic API where not.
  Status runGemms(const std::vector<GemmCall> &calls, const GemmBuffers &buf);
  /// cuBLASLt, readied at the first GEMM with its workspace from the
  /// allocator (none where the limit leaves no room); null where it could
  /// not start or WHALE_CUDA_LT=0 asks for the classic API (A/B runs).
  LtGemms *gemmsThroughLt();
  /// cuBLASLt for an epilogue op planned as `calls`, where it runs there:
  /// one call with something to compute; null where Device composes it.
  LtGemms *epilogueLt(const std::vector<GemmCall> &calls, int64_t outElements);
  /// A weight gradient dw of x (as `x`) with its bias gradient into
  /// `dbias` summed in the GEMM's epilogue: its one call and epilogue, and
  /// cuBLASLt to run them; null where Device composes it.
  LtGemms *weightGradLt(const Shape &x, const Shape &dw, int64_t dwElements,
                        bool transW, float *dbias, GemmCall &call,
                        LtEpilogueArgs &epilogue);
  /// One planned call through `lt` with `epilogue`, its result at `out`
  /// (bf16 where `buf` says so); `ran` false, nothing queued, where cuBLASLt
  /// has no algorithm for it, and the caller composes the op from plain kernels
  /// instead.
  Status epilogueGemm(LtGemms &lt, const GemmCall &g, const GemmBuffers &buf,
                      void *out, const LtEpilogueArgs &epilogue, bool &ran);
  /// The GEMM operands as cuBLAS reads them: the tensors themselves, or
  /// under amp bf16 copies in scratch.
  Status gemmInputs(std::initializer_list<View<const float>> inputs,
                    const void **out);
  /// Layernorm's gradient in one kernel pass (kLayerNormRowMax), the
  /// residual added where given; `ran` false, nothing queued, for wider
  /// rows.
  Status layerNormGradInOnePass(View<const float> x, View<const float> gamma,
                                double eps, View<const float> dy,
                                const float *residual, View<float> dx,
                                View<float> dgamma, View<float> dbeta,
                                bool &ran);
  Status takeDataError(const DataError *record, const char *what,
                       int64_t limit);
  /// A copy between the host and the device that waits for it, without
  /// asking the step's capture (the data-error records' own read).
  Status copyNow(void *dst, const void *src, int64_t bytes, bool toHost);
  /// Makes the compute stream wait for the side streams (collectives,
  /// pipeline sends) that joined a step's capture, as its end needs.
  Status joinCaptured();
  /// A mixture of experts' slots [G, S, k] in scratch, found on the GPU
  /// (runtime/ops/MoeMath.h); fails on a choice outside [0, E).
  Status moeSlots(const MoeShape &m, const int32_t *experts,
                  const int32_t **slots);

  /// A stream for this device's work: on its share's SMs where it has
  /// one, else the GPU's.
  Status newStream(cudaStream_t &out, const std::string &what);

  int ordinal;
  /// The share of the GPU's SMs it runs on; null: the whole GPU.
  std::unique_ptr<GreenContext> share;
  cudaStream_t compute = nullptr;
  cublasHandle_t blas = nullptr;
  LtGemms lt;
  enum class LtState { Unopened, Ready, Off } ltState = LtState::Unopened;
  void *ltWorkspace = nullptr; ///< kLtWorkspaceBytes from the allocator
  DataError *dataError = nullptr;
  /// The train step held as a CUDA graph (StepCapture.h).
  std::unique_ptr<CudaStepGraph> stepGraph;
  std::vector<std::pair<void *, size_t>> scratchSlots;
  /// Scratch outgrown while a held step may still read it: freed with the
  /// device.
  std::vector<void *> retiredScratch;
  /// NCCL communicators by group key (opaque ncclComm_t), made on a
  /// group's first all-reduce.
  std::map<std::string, void *> ncclComms;
  /// The stream NCCL's calls run on, made with the first; the started
  /// collectives' end events by ticket.
  cudaStream_t comms = nullptr;
  std::map<int64_t, cudaEvent_t> started;
  int64_t nextTicket = 1;
  /// A direction between two stages (pairSend / pairRecv): its
  /// two-member communicator and the stream its calls run on, one per
  /// direction so that neither waits behind the other's transfers.
  struct Pair {
    void *comm = nullptr; ///< ncclComm_t
    cudaStream_t stream = nullptr;
  };
  std::map<std::string, Pair> pairs;
  /// The pair `key`, made at its first use with this device at `position`.
  Status pairFor(const std::string &key, int position,
                 const ShareFromFirst &shareFromFirst, Pair *&out);
  /// Each element program read once: by the address of its words (a
  /// constant of the compiled plan), its layout and code in device memory.
  struct LoadedProgram {
    fused::Layout layout;
    fused::Instr *code = nullptr;
    int count = 0;
    /// The program's own generated kernel (ElementKernelSource.h); null:
    /// the interpreter runs it.
    cudaKernel_t kernel = nullptr;
  };
  std::map<const int64_t *, LoadedProgram> programs;
  /// The generated kernel of `layout` and `code`, compiled by NVRTC once
  /// per distinct source (a model's layers repeat their programs); null
  /// where NVRTC is missing or fails, which is said once on stderr.
  /// WHALE_CUDA_ELEMENT_KERNELS=0 keeps the interpreter.
  cudaKernel_t elementKernel(const fused::Layout &layout,
                             const std::vector<fused::Instr> &code);
  std::map<std::string, cudaKernel_t> kernelsBySource;
  std::vector<cudaLibrary_t> libraries;
  bool kernelsUnavailable = false;
};

} // namespace whale::rt::cuda

#endif
