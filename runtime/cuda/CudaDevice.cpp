//===- CudaDevice.cpp - a CUDA GPU as a whale device ----------------------===//
//
// Host code: memory, copies, cuBLAS for every matmul, and the index maps the
// kernels of CudaKernels.cu walk. Every method makes its GPU the thread's,
// queues work on the compute stream and returns; only copies to the host
// (and ops that must report bad ids or labels) wait for the stream.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/CudaDevice.h"

#include "runtime/cuda/DevicePluginAbi.h"
#include "runtime/cuda/ElementKernelSource.h"
#include "runtime/cuda/FlashAttention.h"
#include "runtime/cuda/GemmPlan.h"
#include "runtime/cuda/IndexMaps.h"
#include "runtime/cuda/LtGemm.h"
#include "runtime/cuda/Nvrtc.h"
#include "runtime/ops/AttentionShape.h"
#include "runtime/ops/Bf16.h"
#include "runtime/ops/GroupedKeys.h"

#if WHALE_HAVE_NCCL
#include <nccl.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace whale::rt::cuda {

namespace {

/// A linear layer's fp32 output on amp's storage, before it is rounded.
constexpr int kLinearSumScratch = 28;
/// The scratch slot of the partial sums of sums over rows.
constexpr int kColumnSumScratch = 25;
/// fp32 sums of GEMMs whose result is stored in bf16.
constexpr int kGemmSumScratch = 26;
/// The fused layernorm gradient's partial sums of dgamma and dbeta.
constexpr int kLayerNormScratch = 27;
/// Each row's log-sum-exp, for cross entropy's rounded gradient.
constexpr int kLossLseScratch = 30;

Status cudaFailed(cudaError_t e, const std::string &what) {
  if (e == cudaSuccess)
    return Status::ok();
  if (e == cudaErrorMemoryAllocation)
    return Status::outOfMemory(what + ": " + cudaGetErrorString(e));
  return Status::internal(what + ": " + cudaGetErrorString(e));
}

Status blasFailed(cublasStatus_t s, const char *what) {
  if (s == CUBLAS_STATUS_SUCCESS)
    return Status::ok();
  return Status::internal(std::string(what) + ": cuBLAS status " +
                          std::to_string(static_cast<int>(s)));
}

#if WHALE_HAVE_NCCL
Status ncclFailed(ncclResult_t r, const std::string &what) {
  return r == ncclSuccess
             ? Status::ok()
             : Status::internal(what + ": " + ncclGetErrorString(r));
}

/// Joins a new NCCL communicator of `size` members at `position`: position
/// 0 makes the id and every member gets it from there. The members run on
/// threads (or processes) of their own, so their joins meet.
Status joinNccl(const std::string &device, int size, int position,
                const Device::ShareFromFirst &shareFromFirst,
                ncclComm_t &comm) {
  ncclUniqueId id{};
  if (position == 0)
    if (Status st =
            ncclFailed(ncclGetUniqueId(&id), device + ": ncclGetUniqueId");
        !st)
      return st;
  if (Status st = shareFromFirst(id.internal, sizeof id.internal); !st)
    return st;
  return ncclFailed(ncclCommInitRank(&comm, size, id, position),
                    device + ": ncclCommInitRank");
}
#endif

/// `waiting` waits for `after`'s work so far (an event, recorded and
/// released).
Status streamWaits(const std::string &device, cudaStream_t waiting,
                   cudaStream_t after) {
  cudaEvent_t e = nullptr;
  if (Status st =
          cudaFailed(cudaEventCreateWithFlags(&e, cudaEventDisableTiming),
                     device + ": cudaEventCreate");
      !st)
    return st;
  Status st =
      cudaFailed(cudaEventRecord(e, after), device + ": cudaEventRecord");
  if (st)
    st = cudaFailed(cudaStreamWaitEvent(waiting, e, 0),
                    device + ": cudaStreamWaitEvent");
  cudaEventDestroy(e); // released once recorded and waited on
  return st;
}

bool tf32Allowed() {
  const char *v = std::getenv("WHALE_CUDA_TF32");
  return v && std::strcmp(v, "1") == 0;
}

} // namespace

//===----------------------------------------------------------------------===//
// Memory
//===----------------------------------------------------------------------===//

void *GpuMemory::systemAllocate(size_t bytes) {
  cudaSetDevice(ordinal);
  void *p = nullptr;
  if (cudaMalloc(&p, bytes) != cudaSuccess) {
    cudaGetLastError(); // clear the error before the cache is emptied
    return nullptr;
  }
  return p;
}

void GpuMemory::systemRelease(void *ptr, size_t) {
  cudaSetDevice(ordinal);
  cudaFree(ptr);
}

//===----------------------------------------------------------------------===//
// The device
//===----------------------------------------------------------------------===//

CudaDevice::CudaDevice(const std::string &name, int ordinal,
                       int64_t memoryLimit)
    : Device(name, std::make_unique<GpuMemory>(name, memoryLimit, ordinal)),
      ordinal(ordinal) {}

std::unique_ptr<CudaDevice> CudaDevice::open(const std::string &name,
                                             int ordinal, int sms,
                                             int64_t memoryLimit,
                                             std::string &error) {
  int count = 0;
  if (cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess) {
    error = name + ": " + cudaGetErrorString(e);
    return nullptr;
  }
  if (ordinal < 0 || ordinal >= count) {
    error = name + ": this machine has " + std::to_string(count) +
            " CUDA device" + (count == 1 ? "" : "s") +
            " (cuda:0 to cuda:" + std::to_string(count - 1) + ")";
    return nullptr;
  }
  std::unique_ptr<CudaDevice> dev(new CudaDevice(name, ordinal, memoryLimit));
  Status st = cudaFailed(cudaSetDevice(ordinal), name + ": cudaSetDevice");
  // The primary context first: a green context shares its memory.
  if (st)
    st = cudaFailed(cudaFree(nullptr), name + ": starting the GPU");
  if (st && sms > 0)
    st = GreenContext::open(name, ordinal, sms, dev->share);
  if (st)
    st = dev->newStream(dev->compute, "creating the compute stream");
  if (st)
    st = cudaFailed(cudaMalloc(&dev->dataError, sizeof(DataError)),
                    name + ": allocating the error record");
  if (st) {
    CudaDevice *d = dev.get();
    dev->stepGraph = std::make_unique<CudaStepGraph>(
        name, dev->compute, static_cast<CachingAllocator &>(dev->allocator()),
        [d] { return d->joinCaptured(); });
  }
  if (st)
    st = blasFailed(cublasCreate(&dev->blas), "cublasCreate");
  if (st)
    st =
        blasFailed(cublasSetStream(dev->blas, dev->compute), "cublasSetStream");
  // fp32 by default, so a GPU run trains to the CPU's numbers; TF32 tensor
  // cores when asked for (WHALE_CUDA_TF32=1).
  if (st && tf32Allowed())
    st = blasFailed(cublasSetMathMode(dev->blas, CUBLAS_TF32_TENSOR_OP_MATH),
                    "cublasSetMathMode");
  if (!st) {
    error = st.message();
    return nullptr;
  }
  return dev;
}

CudaDevice::~CudaDevice() {
  cudaSetDevice(ordinal);
  stepGraph.reset(); // its held memory back to the allocator
  if (compute)
    cudaStreamSynchronize(compute);
  for (auto &[key, pair] : pairs)
    cudaStreamSynchronize(pair.stream);
#if WHALE_HAVE_NCCL
  for (auto &[key, comm] : ncclComms)
    ncclCommDestroy(static_cast<ncclComm_t>(comm));
  for (auto &[key, pair] : pairs)
    if (pair.comm)
      ncclCommDestroy(static_cast<ncclComm_t>(pair.comm));
#endif
  for (auto &[key, pair] : pairs)
    if (pair.stream)
      cudaStreamDestroy(pair.stream);
  if (comms)
    cudaStreamSynchronize(comms);
  for (auto &[ticket, done] : started)
    cudaEventDestroy(done);
  for (cudaEvent_t marker : markers)
    if (marker)
      cudaEventDestroy(marker);
  if (comms)
    cudaStreamDestroy(comms);
  for (auto &[p, size] : scratchSlots)
    cudaFree(p);
  for (void *p : retiredScratch)
    cudaFree(p);
  for (auto &[words, loaded] : programs)
    cudaFree(loaded.code);
  for (cudaLibrary_t library : libraries)
    cudaLibraryUnload(library);
  if (dataError)
    cudaFree(dataError);
  if (blas)
    cublasDestroy(blas);
  if (ltWorkspace)
    allocator().release(ltWorkspace, static_cast<int64_t>(kLtWorkspaceBytes));
  if (compute)
    cudaStreamDestroy(compute);
}

Status CudaDevice::newStream(cudaStream_t &out, const std::string &what) {
  if (share)
    return share->newStream(out, what);
  return cudaFailed(cudaStreamCreateWithFlags(&out, cudaStreamNonBlocking),
                    name() + ": " + what);
}

Status CudaDevice::enter() {
  return cudaFailed(cudaSetDevice(ordinal), name() + ": cudaSetDevice");
}

Status CudaDevice::launched(const char *what) {
  return cudaFailed(cudaGetLastError(), name() + ": " + what);
}

Status CudaDevice::scratch(int slot, size_t bytes, void **out) {
  if (scratchSlots.size() <= static_cast<size_t>(slot))
    scratchSlots.resize(slot + 1, {nullptr, 0});
  auto &[p, size] = scratchSlots[slot];
  if (size < bytes) {
    // The stream may still read the old buffer: wait before freeing it.
    // A captured step cannot wait, nor keep a buffer freed under it.
    if (stepGraph->capturing())
      return stepGraph->hostWait("growing scratch slot " +
                                 std::to_string(slot));
    if (p && stepGraph->holding()) {
      retiredScratch.push_back(p); // the held step's replays write there
    } else if (p) {
      cudaStreamSynchronize(compute);
      cudaFree(p);
    }
    p = nullptr;
    size = 0;
    if (Status st = cudaFailed(cudaMalloc(&p, std::max<size_t>(bytes, 256)),
                               name() + ": scratch memory");
        !st)
      return st;
    size = std::max<size_t>(bytes, 256);
  }
  *out = p;
  return Status::ok();
}

Status CudaDevice::columnScratch(int64_t rows, int64_t width, int outputs,
                                 float *&partials) {
  partials = nullptr;
  int64_t floats = columnSumScratch(rows, width, outputs);
  if (floats == 0)
    return Status::ok();
  void *buffer;
  if (Status st = scratch(kColumnSumScratch, floats * sizeof(float), &buffer);
      !st)
    return st;
  partials = static_cast<float *>(buffer);
  return Status::ok();
}

Status CudaDevice::clearDataError(DataError **record) {
  if (Status st = stepGraph->checkSlot(dataError, record); !st)
    return st;
  return cudaFailed(cudaMemsetAsync(*record, 0xff, sizeof(DataError), compute),
                    name() + ": clearing the error record");
}

Status CudaDevice::takeDataError(const DataError *record, const char *what,
                                 int64_t limit) {
  if (Status st = launched(what); !st)
    return st;
  if (stepGraph->capturing()) {
    stepGraph->deferCheck(what, limit);
    return Status::ok();
  }
  DataError found;
  if (Status st = copyNow(&found, record, sizeof found, /*toHost=*/true); !st)
    return st;
  return dataErrorStatus(found, what, limit);
}

Status CudaDevice::copyAndWait(void *dst, const void *src, int64_t bytes,
                               bool toHost) {
  if (bytes > 0)
    if (Status st = stepGraph->hostWait(toHost ? "a copy to the host"
                                               : "a copy from the host");
        !st)
      return st;
  return copyNow(dst, src, bytes, toHost);
}

Status CudaDevice::copyNow(void *dst, const void *src, int64_t bytes,
                           bool toHost) {
  if (Status st = enter(); !st)
    return st;
  if (bytes == 0)
    return Status::ok();
  // A host buffer may be read (or go) as soon as this returns: wait.
  Status st = cudaFailed(
      cudaMemcpyAsync(dst, src, bytes,
                      toHost ? cudaMemcpyDeviceToHost : cudaMemcpyHostToDevice,
                      compute),
      name() + (toHost ? ": copy to the host" : ": copy from the host"));
  if (st)
    st = cudaFailed(cudaStreamSynchronize(compute), name() + ": synchronize");
  return st;
}

Status CudaDevice::joinCaptured() {
  std::vector<cudaStream_t> sides;
  if (comms)
    sides.push_back(comms);
  for (auto &[key, pair] : pairs)
    sides.push_back(pair.stream);
  for (cudaStream_t side : sides) {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    if (Status st = cudaFailed(cudaStreamIsCapturing(side, &status),
                               name() + ": cudaStreamIsCapturing");
        !st)
      return st;
    if (status == cudaStreamCaptureStatusActive)
      if (Status st = streamWaits(name(), compute, side); !st)
        return st;
  }
  return Status::ok();
}

Status CudaDevice::copyToHost(void *host, const void *src, int64_t bytes) {
  return copyAndWait(host, src, bytes, /*toHost=*/true);
}

Status CudaDevice::copyFromHost(void *dst, const void *host, int64_t bytes) {
  return copyAndWait(dst, host, bytes, /*toHost=*/false);
}

Status CudaDevice::copy(void *dst, const void *src, int64_t bytes) {
  if (Status st = enter(); !st)
    return st;
  if (bytes == 0)
    return Status::ok();
  return cudaFailed(
      cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, compute),
      name() + ": copy");
}

Status CudaDevice::fill(void *data, DType dtype, int64_t n, double value) {
  if (Status st = enter(); !st)
    return st;
  if (n == 0)
    return Status::ok();
  switch (dtype) {
  case DType::F32:
    fillF32(compute, static_cast<float *>(data), n, static_cast<float>(value));
    break;
  case DType::F64:
    fillF64(compute, static_cast<double *>(data), n, value);
    break;
  case DType::I32:
    fillI32(compute, static_cast<int32_t *>(data), n,
            static_cast<int32_t>(value));
    break;
  case DType::I64:
    fillI64(compute, static_cast<int64_t *>(data), n,
            static_cast<int64_t>(value));
    break;
  case DType::BF16:
    // The bits rounded on the host exactly as the device rounds.
    fillU16(compute, static_cast<uint16_t *>(data), n,
            bf16Bits(static_cast<float>(value)));
    break;
  }
  return launched("fill");
}

Status CudaDevice::toBf16(View<const float> x, View<uint16_t> out) {
  if (Status st = enter(); !st)
    return st;
  if (x.numel() == 0)
    return Status::ok();
  castToBf16(compute, x.data, out.data, x.numel());
  return launched("to_bf16");
}

Status CudaDevice::roundAndSum(View<const float> x, View<uint16_t> rounded,
                               View<float> sum) {
  if (Status st = enter(); !st)
    return st;
  const int64_t width = sum.numel();
  if (width == 0)
    return Status::ok();
  const int64_t rows = x.numel() / width;
  if (rows == 0) {
    fillF32(compute, sum.data, width, 0.0f);
    return launched("round_and_sum");
  }
  // The plan binaryBackward's bias sum takes for these rows and columns
  // (columnOperands): the same sums in the same order.
  float *partials;
  if (Status st = columnScratch(rows, width, 1, partials); !st)
    return st;
  roundAndSumRows(compute, x.data, rounded.data, sum.data, rows, width,
                  partials);
  return launched("round_and_sum");
}

Status CudaDevice::fromBf16(View<const uint16_t> x, View<float> out) {
  if (Status st = enter(); !st)
    return st;
  if (x.numel() == 0)
    return Status::ok();
  castFromBf16(compute, x.data, out.data, x.numel());
  return launched("from_bf16");
}

//===----------------------------------------------------------------------===//
// Matmul on cuBLAS
//===----------------------------------------------------------------------===//

/// The buffers a GEMM plan names. The inputs (A, B, C) are fp32, or bf16
/// under amp (copies, or amp's storage itself); each output is fp32, or
/// under amp's storage bf16, rounded once from the fp32 accumulation.
struct GemmBuffers {
  const void *a, *b, *c;
  void *da, *db, *out;
  bool bf16; ///< the inputs are bf16
  bool daBf16 = false, dbBf16 = false, outBf16 = false;
  const void *input(Operand o) const {
    return o == Operand::A ? a : o == Operand::B ? b : c;
  }
  void *output(Operand o) const {
    return o == Operand::DA ? da : o == Operand::DB ? db : out;
  }
  bool outputBf16(Operand o) const {
    return o == Operand::DA ? daBf16 : o == Operand::DB ? dbBf16 : outBf16;
  }
};

LtGemms *CudaDevice::gemmsThroughLt() {
  if (ltState == LtState::Unopened) {
    const char *v = std::getenv("WHALE_CUDA_LT");
    ltState = (v && std::strcmp(v, "0") == 0) || !lt.open() ? LtState::Off
                                                            : LtState::Ready;
    // The workspace counts against the device's limit as any tensor does;
    // without room for it the algorithms that need none still run.
    if (ltState == LtState::Ready &&
        allocator().allocate(static_cast<int64_t>(kLtWorkspaceBytes),
                             &ltWorkspace))
      lt.setWorkspace(ltWorkspace, kLtWorkspaceBytes);
    else
      ltWorkspace = nullptr;
  }
  return ltState == LtState::Ready ? &lt : nullptr;
}

/// Runs planned GEMMs (GemmPlan.h): through cuBLASLt (LtGemm.h) where it
/// has an algorithm for the call, else cublasSgemm for fp32 and
/// cublasGemmEx for bf16 inputs with fp32 accumulation (tensor cores), each
/// result stored in fp32 or bf16.
Status CudaDevice::runGemms(const std::vector<GemmCall> &calls,
                            const GemmBuffers &buf) {
  cublasHandle_t h = blas;
  LtGemms *ltGemms = gemmsThroughLt();
  const bool tf32 = tf32Allowed();
  const float alpha = 1.0f;
  const size_t elem = buf.bf16 ? 2 : 4;
  for (const GemmCall &g : calls) {
    if (g.m == 0 || g.n == 0 || g.batch == 0)
      continue;
    const bool outBf16 = buf.outputBf16(g.out);
    if (outBf16 && !buf.bf16)
      return Status::invalid("a bf16 GEMM result needs bf16 inputs");
    const char *first =
        static_cast<const char *>(buf.input(g.first)) + g.offFirst * elem;
    const char *second =
        static_cast<const char *>(buf.input(g.second)) + g.offSecond * elem;
    void *result =
        static_cast<char *>(buf.output(g.out)) + g.offOut * (outBf16 ? 2 : 4);
    if (ltGemms) {
      bool ran = false;
      if (Status st = ltGemms->run(
              compute, g, LtOperands{first, second, result, buf.bf16, outBf16},
              tf32, ran);
          !st)
        return st;
      if (ran)
        continue;
    }
    cublasOperation_t opFirst = g.transFirst ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasOperation_t opSecond = g.transSecond ? CUBLAS_OP_T : CUBLAS_OP_N;
    Status st =
        buf.bf16
            ? blasFailed(cublasGemmStridedBatchedEx(
                             h, opFirst, opSecond, static_cast<int>(g.m),
                             static_cast<int>(g.n), static_cast<int>(g.k),
                             &alpha, first, CUDA_R_16BF,
                             static_cast<int>(g.ldFirst), g.strideFirst, second,
                             CUDA_R_16BF, static_cast<int>(g.ldSecond),
                             g.strideSecond, &g.beta, result,
                             outBf16 ? CUDA_R_16BF : CUDA_R_32F,
                             static_cast<int>(g.ldOut), g.strideOut,
                             static_cast<int>(g.batch), CUBLAS_COMPUTE_32F,
                             CUBLAS_GEMM_DEFAULT),
                         "cublasGemmStridedBatchedEx")
            : blasFailed(cublasSgemmStridedBatched(
                             h, opFirst, opSecond, static_cast<int>(g.m),
                             static_cast<int>(g.n), static_cast<int>(g.k),
                             &alpha, reinterpret_cast<const float *>(first),
                             static_cast<int>(g.ldFirst), g.strideFirst,
                             reinterpret_cast<const float *>(second),
                             static_cast<int>(g.ldSecond), g.strideSecond,
                             &g.beta, static_cast<float *>(result),
                             static_cast<int>(g.ldOut), g.strideOut,
                             static_cast<int>(g.batch)),
                         "cublasSgemmStridedBatched");
    if (!st)
      return st;
  }
  return Status::ok();
}

Status CudaDevice::gemmInputs(std::initializer_list<View<const float>> inputs,
                              const void **out) {
  bool bf16 = matmulPrecision() == MatmulPrecision::BF16;
  int slot = 4; // scratch slots 4.. hold the bf16 copies
  for (const View<const float> &x : inputs) {
    if (!bf16) {
      *out++ = x.data;
      continue;
    }
    void *copy;
    if (Status st = scratch(slot++, x.numel() * 2, &copy); !st)
      return st;
    if (x.numel() > 0)
      castToBf16(compute, x.data, copy, x.numel());
    *out++ = copy;
  }
  return launched("rounding to bf16");
}

Status CudaDevice::matmul(View<const float> a, View<const float> b,
                          View<float> out, bool transA, bool transB) {
  if (Status st = enter(); !st)
    return st;
  const void *in[2];
  if (Status st = gemmInputs({a, b}, in); !st)
    return st;
  MatmulDims d = matmulDims(a.shape, b.shape, transA, transB);
  return runGemms(planMatmul(d, transA, transB),
                  GemmBuffers{in[0], in[1], nullptr, nullptr, nullptr, out.data,
                              matmulPrecision() == MatmulPrecision::BF16});
}

namespace {

/// A linear layer's forward epilogue: the bias, then the GELU where asked,
/// keeping the sum before it at `pre` where given.
LtEpilogueArgs linearEpilogue(const float *bias, void *pre, bool gelu) {
  LtEpilogueArgs e;
  e.kind = !gelu ? LtEpilogue::Bias
           : pre ? LtEpilogue::GeluAuxBias
                 : LtEpilogue::GeluBias;
  e.bias = const_cast<float *>(bias); // read, not written
  e.aux = pre;
  return e;
}

/// A weight gradient's epilogue summing the bias gradient into `dbias`:
/// the output gradient is C of the plan, and its rows are the GEMM's inner
/// dimension, which BGRADA or BGRADB sums. None where the plan is not one
/// call.
LtEpilogueArgs weightGradEpilogue(const std::vector<GemmCall> &calls,
                                  float *dbias) {
  LtEpilogueArgs e;
  e.kind = calls.size() == 1 ? ltBiasGradient(calls[0], Operand::C)
                             : LtEpilogue::None;
  e.bias = dbias;
  return e;
}

/// The GELU's gradient at the preactivation `pre`, laid out as the input's
/// gradient (the result): the same rows and leading dimension.
LtEpilogueArgs dgeluEpilogue(const void *pre) {
  LtEpilogueArgs e;
  e.kind = LtEpilogue::Dgelu;
  e.aux = const_cast<void *>(pre); // read, not written
  return e;
}

} // namespace

LtGemms *CudaDevice::epilogueLt(const std::vector<GemmCall> &calls,
                                int64_t outElements) {
  LtGemms *ltGemms = gemmsThroughLt();
  return ltGemms && outElements > 0 && calls.size() == 1 ? ltGemms : nullptr;
}

Status CudaDevice::linear(View<const float> x, View<const float> w,
                          View<const float> bias, View<float> out,
                          View<float> *pre, bool transW, bool gelu) {
  if (Status st = enter(); !st)
    return st;
  std::vector<GemmCall> calls =
      planMatmul(matmulDims(x.shape, w.shape, false, transW), false, transW);
  LtGemms *ltGemms = epilogueLt(calls, out.numel());
  if (!ltGemms)
    return Device::linear(x, w, bias, out, pre, transW, gelu);
  const void *in[2];
  if (Status st = gemmInputs({x, w}, in); !st)
    return st;
  const bool bf16 = matmulPrecision() == MatmulPrecision::BF16;
  GemmBuffers buf{in[0], in[1], nullptr, nullptr, nullptr, out.data, bf16};
  bool ran = false;
  if (Status st = epilogueGemm(
          *ltGemms, calls[0], buf, out.data,
          linearEpilogue(bias.data, pre ? pre->data : nullptr, gelu), ran);
      !st)
    return st;
  return ran ? Status::ok()
             : Device::linear(x, w, bias, out, pre, transW, gelu);
}

Status CudaDevice::epilogueGemm(LtGemms &lt, const GemmCall &g,
                                const GemmBuffers &buf, void *out,
                                const LtEpilogueArgs &epilogue, bool &ran) {
  return lt.run(compute, g,
                LtOperands{buf.input(g.first), buf.input(g.second), out,
                           buf.bf16, buf.outputBf16(g.out)},
                tf32Allowed(), ran, epilogue);
}

LtGemms *CudaDevice::weightGradLt(const Shape &x, const Shape &dw,
                                  int64_t dwElements, bool transW, float *dbias,
                                  GemmCall &call, LtEpilogueArgs &epilogue) {
  std::vector<GemmCall> calls = planMatmulBackward(
      matmulDims(x, dw, false, transW), false, transW, false, true);
  epilogue = weightGradEpilogue(calls, dbias);
  LtGemms *ltGemms = epilogueLt(calls, dwElements);
  if (!ltGemms || epilogue.kind == LtEpilogue::None)
    return nullptr;
  call = calls[0];
  return ltGemms;
}

Status CudaDevice::linearWeightGrad(View<const float> x, View<const float> dout,
                                    View<float> dw, View<float> dbias,
                                    bool transW) {
  if (Status st = enter(); !st)
    return st;
  GemmCall call{};
  LtEpilogueArgs epilogue;
  LtGemms *ltGemms = weightGradLt(x.shape, dw.shape, dw.numel(), transW,
                                  dbias.data, call, epilogue);
  if (!ltGemms)
    return Device::linearWeightGrad(x, dout, dw, dbias, transW);
  const void *in[2];
  if (Status st = gemmInputs({x, dout}, in); !st)
    return st;
  const bool bf16 = matmulPrecision() == MatmulPrecision::BF16;
  GemmBuffers buf{in[0], nullptr, in[1], nullptr, dw.data, nullptr, bf16};
  bool ran = false;
  if (Status st = epilogueGemm(*ltGemms, call, buf, dw.data, epilogue, ran);
      !st)
    return st;
  return ran ? Status::ok()
             : Device::linearWeightGrad(x, dout, dw, dbias, transW);
}

Status CudaDevice::geluMatmulGrad(View<const float> pre, View<const float> w,
                                  View<const float> dout, View<float> dpre,
                                  bool transW) {
  if (Status st = enter(); !st)
    return st;
  std::vector<GemmCall> calls =
      planMatmulBackward(matmulDims(pre.shape, w.shape, false, transW), false,
                         transW, true, false);
  LtGemms *ltGemms = epilogueLt(calls, dpre.numel());
  if (!ltGemms || calls[0].batch != 1)
    return Device::geluMatmulGrad(pre, w, dout, dpre, transW);
  const void *in[2];
  if (Status st = gemmInputs({w, dout}, in); !st)
    return st;
  const bool bf16 = matmulPrecision() == MatmulPrecision::BF16;
  GemmBuffers buf{nullptr, in[0], in[1], dpre.data, nullptr, nullptr, bf16};
  bool ran = false;
  if (Status st = epilogueGemm(*ltGemms, calls[0], buf, dpre.data,
                               dgeluEpilogue(pre.data), ran);
      !st)
    return st;
  return ran ? Status::ok()
             : Device::geluMatmulGrad(pre, w, dout, dpre, transW);
}

Status CudaDevice::linearBf16(View<const uint16_t> x, View<const uint16_t> w,
                              View<const float> bias, MixedOut out,
                              MixedOut *pre, bool transW, bool gelu) {
  if (Status st = enter(); !st)
    return st;
  std::vector<GemmCall> calls =
      planMatmul(matmulDims(x.shape, w.shape, false, transW), false, transW);
  const int64_t n = numElements(out.shape);
  LtGemms *ltGemms = epilogueLt(calls, n);
  if (!ltGemms)
    return Device::linearBf16(x, w, bias, out, pre, transW, gelu);
  // cuBLASLt keeps the preactivation in the output's type. Where it is
  // kept in fp32 beside a bf16 output, the GEMM stores both in fp32 and
  // the output is rounded after it.
  const bool roundAfter =
      pre && pre->dtype == DType::F32 && out.dtype == DType::BF16;
  void *target = out.data;
  if (roundAfter)
    if (Status st = scratch(kLinearSumScratch, n * 4, &target); !st)
      return st;
  GemmBuffers buf{x.data, w.data, nullptr, nullptr, nullptr, target, true};
  buf.outBf16 = out.dtype == DType::BF16 && !roundAfter;
  bool ran = false;
  if (Status st = epilogueGemm(
          *ltGemms, calls[0], buf, target,
          linearEpilogue(bias.data, pre ? pre->data : nullptr, gelu), ran);
      !st)
    return st;
  if (!ran)
    return Device::linearBf16(x, w, bias, out, pre, transW, gelu);
  if (!roundAfter)
    return Status::ok();
  castToBf16(compute, static_cast<const float *>(target), out.data, n);
  return launched("rounding a linear layer's output to bf16");
}

Status CudaDevice::linearWeightGradBf16(View<const uint16_t> x,
                                        View<const uint16_t> dout,
                                        View<float> dw, View<float> dbias,
                                        bool transW) {
  if (Status st = enter(); !st)
    return st;
  GemmCall call{};
  LtEpilogueArgs epilogue;
  LtGemms *ltGemms = weightGradLt(x.shape, dw.shape, dw.numel(), transW,
                                  dbias.data, call, epilogue);
  if (!ltGemms)
    return Device::linearWeightGradBf16(x, dout, dw, dbias, transW);
  // dw and dbias in fp32: the bias gradient is summed in the output's type.
  GemmBuffers buf{x.data, nullptr, dout.data, nullptr, dw.data, nullptr, true};
  bool ran = false;
  if (Status st = epilogueGemm(*ltGemms, call, buf, dw.data, epilogue, ran);
      !st)
    return st;
  return ran ? Status::ok()
             : Device::linearWeightGradBf16(x, dout, dw, dbias, transW);
}

Status CudaDevice::geluMatmulGradBf16(MixedIn pre, View<const uint16_t> w,
                                      View<const uint16_t> dout, MixedOut dpre,
                                      bool transW) {
  if (Status st = enter(); !st)
    return st;
  std::vector<GemmCall> calls =
      planMatmulBackward(matmulDims(pre.shape, w.shape, false, transW), false,
                         transW, true, false);
  // The preactivation is read in the result's type (checked equal by the
  // C ABI).
  LtGemms *ltGemms = epilogueLt(calls, numElements(dpre.shape));
  if (!ltGemms || calls[0].batch != 1 || pre.dtype != dpre.dtype)
    return Device::geluMatmulGradBf16(pre, w, dout, dpre, transW);
  GemmBuffers buf{nullptr, w.data,  dout.data, dpre.data,
                  nullptr, nullptr, true};
  buf.daBf16 = dpre.dtype == DType::BF16;
  bool ran = false;
  if (Status st = epilogueGemm(*ltGemms, calls[0], buf, dpre.data,
                               dgeluEpilogue(pre.data), ran);
      !st)
    return st;
  return ran ? Status::ok()
             : Device::geluMatmulGradBf16(pre, w, dout, dpre, transW);
}

Status CudaDevice::matmulBackward(View<const float> a, View<const float> b,
                                  View<const float> dout, View<float> *da,
                                  View<float> *db, bool transA, bool transB) {
  if (Status st = enter(); !st)
    return st;
  const void *in[3];
  if (Status st = gemmInputs({a, b, dout}, in); !st)
    return st;
  MatmulDims d = matmulDims(a.shape, b.shape, transA, transB);
  return runGemms(
      planMatmulBackward(d, transA, transB, da != nullptr, db != nullptr),
      GemmBuffers{in[0], in[1], in[2], da ? da->data : nullptr,
                  db ? db->data : nullptr, nullptr,
                  matmulPrecision() == MatmulPrecision::BF16});
}

Status CudaDevice::matmulBf16(View<const uint16_t> a, View<const uint16_t> b,
                              MixedOut out, bool transA, bool transB) {
  if (Status st = enter(); !st)
    return st;
  GemmBuffers buf{a.data, b.data, nullptr, nullptr, nullptr, out.data, true};
  buf.outBf16 = out.dtype == DType::BF16;
  return runGemms(
      planMatmul(matmulDims(a.shape, b.shape, transA, transB), transA, transB),
      buf);
}

Status CudaDevice::matmulBf16Backward(View<const uint16_t> a,
                                      View<const uint16_t> b,
                                      View<const uint16_t> dout, MixedOut *da,
                                      MixedOut *db, bool transA, bool transB) {
  if (Status st = enter(); !st)
    return st;
  std::vector<GemmCall> calls =
      planMatmulBackward(matmulDims(a.shape, b.shape, transA, transB), transA,
                         transB, da != nullptr, db != nullptr);
  GemmBuffers buf{a.data,
                  b.data,
                  dout.data,
                  da ? da->data : nullptr,
                  db ? db->data : nullptr,
                  nullptr,
                  true};
  buf.daBf16 = da && da->dtype == DType::BF16;
  buf.dbBf16 = db && db->dtype == DType::BF16;
  // A gradient summed by several GEMMs (GemmPlan.h: a shared b under a
  // transposed a) adds in fp32 scratch and is rounded once at the end.
  const bool roundAfter = buf.dbBf16 && accumulates(calls, Operand::DB);
  if (roundAfter) {
    if (Status st =
            scratch(kGemmSumScratch, numElements(db->shape) * 4, &buf.db);
        !st)
      return st;
    buf.dbBf16 = false;
  }
  if (Status st = runGemms(calls, buf); !st)
    return st;
  if (!roundAfter)
    return Status::ok();
  castToBf16(compute, static_cast<const float *>(buf.db), db->data,
             numElements(db->shape));
  return launched("rounding a summed gradient to bf16");
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

Status CudaDevice::binary(BinaryOp op, View<const float> a, View<const float> b,
                          View<float> out) {
  if (Status st = enter(); !st)
    return st;
  if (Status st = rankFits(out.shape, "binary"); !st)
    return st;
  Strided map = broadcastMap(out.shape, a.shape, &b.shape);
  if (out.numel() == 0)
    return Status::ok();
  cuda::binary(compute, static_cast<int>(op), a.data, b.data, out.data, map,
               out.numel());
  return launched("binary");
}

Status CudaDevice::binaryBackward(BinaryOp op, View<const float> a,
                                  View<const float> b, View<const float> dout,
                                  View<float> *da, View<float> *db) {
  if (Status st = enter(); !st)
    return st;
  if (Status st = rankFits(dout.shape, "binary_grad"); !st)
    return st;
  int which = 0;
  for (View<float> *grad : {da, db}) {
    ColumnOperands columns;
    if (grad && grad->numel() > 0 &&
        columnOperands(dout.shape, a.shape, b.shape, grad->shape, columns)) {
      // A bias's gradient: a sum over rows, coalesced (ColumnSums.h).
      float *partials;
      if (Status st = columnScratch(columns.rows, columns.width, 1, partials);
          !st)
        return st;
      binaryGradColumns(compute, static_cast<int>(op), which, a.data, b.data,
                        dout.data, grad->data, columns, partials);
    } else if (grad && grad->numel() > 0) {
      int64_t perPart;
      Walk walk = binaryGradientWalk(dout.shape, a.shape, b.shape, grad->shape,
                                     perPart);
      cuda::binaryGrad(compute, static_cast<int>(op), which, a.data, b.data,
                       dout.data, grad->data, walk, grad->numel(), perPart);
    }
    ++which;
  }
  return launched("binary_grad");
}

Status CudaDevice::unary(UnaryOp op, View<const float> x, View<float> out) {
  if (Status st = enter(); !st)
    return st;
  if (x.numel() > 0)
    cuda::unary(compute, static_cast<int>(op), x.data, out.data, x.numel());
  return launched("unary");
}

Status CudaDevice::unaryBackward(UnaryOp op, View<const float> x,
                                 View<const float> y, View<const float> dy,
                                 View<float> dx) {
  if (Status st = enter(); !st)
    return st;
  if (x.numel() > 0)
    cuda::unaryGrad(compute, static_cast<int>(op), x.data, y.data, dy.data,
                    dx.data, x.numel());
  return launched("unary_grad");
}

Status CudaDevice::causalMask(View<const float> x, View<float> out) {
  if (Status st = enter(); !st)
    return st;
  size_t r = x.shape.size();
  if (x.numel() > 0)
    cuda::causalMask(compute, x.data, out.data, x.numel(), x.shape[r - 2],
                     x.shape[r - 1], false);
  return launched("causal_mask");
}

Status CudaDevice::causalMaskBackward(View<const float> dy, View<float> dx) {
  if (Status st = enter(); !st)
    return st;
  size_t r = dy.shape.size();
  if (dy.numel() > 0)
    cuda::causalMask(compute, dy.data, dx.data, dy.numel(), dy.shape[r - 2],
                     dy.shape[r - 1], true);
  return launched("causal_mask_grad");
}

Status CudaDevice::topk(View<const float> x, int64_t k, float *values,
                        int32_t *positions) {
  if (Status st = enter(); !st)
    return st;
  const int64_t n = x.shape.back(), rows = n > 0 ? x.numel() / n : 0;
  cuda::topk(compute, x.data, rows, n, k, values, positions);
  return launched("topk");
}

Status CudaDevice::topkBackward(View<const float> x, int64_t k,
                                View<const float> dy, View<float> dx) {
  if (Status st = enter(); !st)
    return st;
  const int64_t n = x.shape.back(), rows = n > 0 ? x.numel() / n : 0;
  cuda::topkGrad(compute, x.data, rows, n, k, dy.data, dx.data);
  return launched("topk_grad");
}

// Scratch slots of the routing: above the GEMM copies' (4..).
constexpr int kMoeSlotsScratch = 16, kMoeCountsScratch = 17;

Status CudaDevice::moeSlots(const MoeShape &m, const int32_t *experts,
                            const int32_t **slots) {
  void *found, *counts;
  if (Status st = scratch(
          kMoeSlotsScratch,
          std::max<int64_t>(1, m.choiceCount()) * sizeof(int32_t), &found);
      !st)
    return st;
  if (Status st =
          scratch(kMoeCountsScratch,
                  std::max<int64_t>(1, m.groups * m.experts) * sizeof(int32_t),
                  &counts);
      !st)
    return st;
  DataError *record;
  if (Status st = clearDataError(&record); !st)
    return st;
  cuda::moeSlots(compute, m, experts, static_cast<int32_t *>(found),
                 static_cast<int32_t *>(counts), record);
  *slots = static_cast<const int32_t *>(found);
  return takeDataError(record, "expert", m.experts);
}

Status CudaDevice::moeDispatch(const MoeShape &m, const float *tokens,
                               const int32_t *experts, const float *gates,
                               float *slotted) {
  if (Status st = enter(); !st)
    return st;
  const int32_t *slots;
  if (Status st = moeSlots(m, experts, &slots); !st)
    return st;
  if (Status st = fill(slotted, DType::F32,
                       m.experts * m.groups * m.capacity * m.width, 0);
      !st)
    return st;
  cuda::moeDispatch(compute, m, tokens, slots, gates, slotted);
  return launched("moe_dispatch");
}

Status CudaDevice::moeCombine(const MoeShape &m, const float *slotted,
                              const int32_t *experts, const float *gates,
                              float *tokens) {
  if (Status st = enter(); !st)
    return st;
  const int32_t *slots;
  if (Status st = moeSlots(m, experts, &slots); !st)
    return st;
  cuda::moeCombine(compute, m, slotted, slots, gates, tokens);
  return launched("moe_combine");
}

Status CudaDevice::moeGateGrad(const MoeShape &m, const float *tokens,
                               const float *slotted, const int32_t *experts,
                               float *dgates) {
  if (Status st = enter(); !st)
    return st;
  const int32_t *slots;
  if (Status st = moeSlots(m, experts, &slots); !st)
    return st;
  cuda::moeGateGrad(compute, m, tokens, slotted, slots, dgates);
  return launched("moe_gate_grad");
}

Status CudaDevice::dropout(View<const float> x, const DropoutDraw &draw,
                           int64_t firstRow, float scale, View<float> y) {
  if (Status st = enter(); !st)
    return st;
  const int64_t n = x.numel();
  const int64_t perRow =
      x.shape.empty() || x.shape[0] == 0 ? 0 : n / x.shape[0];
  // Every step draws afresh.
  const DropoutDraw *live = nullptr;
  if (Status st = stepGraph->live<DropoutDraw>(
          draw, [draw](const TrainState &s) { return draw.at(s.step); }, &live);
      !st)
    return st;
  cuda::dropout(compute, x.data, n, draw, live, firstRow * perRow, scale,
                y.data);
  return launched("dropout");
}

Status CudaDevice::oneHot(const int32_t *ids, int64_t count, int64_t classes,
                          float *out) {
  if (Status st = enter(); !st)
    return st;
  DataError *record;
  if (Status st = clearDataError(&record); !st)
    return st;
  cuda::oneHot(compute, ids, count, classes, out, record);
  return takeDataError(record, "one_hot id", classes);
}

Status CudaDevice::im2col(View<const float> x, const Window2d &w, float *cols,
                          int64_t rowStride) {
  if (Status st = enter(); !st)
    return st;
  cuda::im2col(compute, x.data, cols, rowStride, samplePlanes(x.shape, w), w);
  return launched("im2col");
}

Status CudaDevice::col2im(const float *cols, int64_t rowStride,
                          const Window2d &w, View<float> dx) {
  if (Status st = enter(); !st)
    return st;
  cuda::col2im(compute, cols, rowStride, dx.data, samplePlanes(dx.shape, w), w);
  return launched("col2im");
}

Status CudaDevice::pool2d(bool max, View<const float> x, const Window2d &w,
                          View<float> y) {
  if (Status st = enter(); !st)
    return st;
  cuda::pool2d(compute, max, x.data, y.data, planesOf(x.shape, y.shape), w);
  return launched("pool2d");
}

Status CudaDevice::pool2dBackward(bool max, View<const float> x,
                                  View<const float> dy, const Window2d &w,
                                  View<float> dx) {
  if (Status st = enter(); !st)
    return st;
  cuda::pool2dGrad(compute, max, x.data, dy.data, dx.data,
                   planesOf(x.shape, dy.shape), w);
  return launched("pool2d_grad");
}

Status CudaDevice::broadcastTo(View<const float> x, View<float> out) {
  if (Status st = enter(); !st)
    return st;
  if (Status st = rankFits(out.shape, "broadcast"); !st)
    return st;
  if (out.numel() > 0)
    gather(compute, x.data, out.data, broadcastMap(out.shape, x.shape),
           out.numel());
  return launched("broadcast");
}

//===----------------------------------------------------------------------===//
// Normalization and losses
//===----------------------------------------------------------------------===//

Status CudaDevice::softmax(View<const float> x, int64_t axis, View<float> y) {
  if (Status st = enter(); !st)
    return st;
  int64_t outer, extent, inner;
  aroundAxis(x.shape, axis, outer, extent, inner);
  if (x.numel() > 0)
    cuda::softmax(compute, x.data, y.data, outer, extent, inner);
  return launched("softmax");
}

Status CudaDevice::softmaxBackward(View<const float> y, View<const float> dy,
                                   int64_t axis, View<float> dx) {
  if (Status st = enter(); !st)
    return st;
  int64_t outer, extent, inner;
  aroundAxis(y.shape, axis, outer, extent, inner);
  if (y.numel() > 0)
    softmaxGrad(compute, y.data, dy.data, dx.data, outer, extent, inner);
  return launched("softmax_grad");
}

namespace {
/// x [N, C, S...] as N, C and S.
void channelsOf(const Shape &shape, int64_t &rows, int64_t &channels,
                int64_t &size) {
  rows = shape[0];
  channels = shape[1];
  size = 1;
  for (size_t i = 2; i < shape.size(); ++i)
    size *= shape[i];
}
} // namespace

Status CudaDevice::channelVectors(const Shape &shape,
                                  std::initializer_list<const float *> host,
                                  ChannelExtents &e, float **device) {
  if (Status st = enter(); !st)
    return st;
  channelsOf(shape, e.rows, e.channels, e.size);
  void *buf;
  if (Status st = scratch(0, host.size() * e.channels * sizeof(float), &buf);
      !st)
    return st;
  *device = static_cast<float *>(buf);
  // One upload of the vectors side by side (room only for a null one).
  std::vector<float> packed(host.size() * e.channels);
  size_t i = 0;
  for (const float *h : host) {
    if (h)
      std::copy(h, h + e.channels, packed.begin() + i * e.channels);
    ++i;
  }
  return copyAndWait(*device, packed.data(), packed.size() * sizeof(float),
                     /*toHost=*/false);
}

Status CudaDevice::channelSums(View<const float> x, const float *center,
                               float *sums) {
  ChannelExtents e;
  float *dev;
  if (Status st = channelVectors(x.shape, {center, nullptr}, e, &dev); !st)
    return st;
  cuda::channelSums(compute, x.data, center ? dev : nullptr, dev + e.channels,
                    e.rows, e.channels, e.size);
  if (Status st = launched("channel_sums"); !st)
    return st;
  return copyAndWait(sums, dev + e.channels, e.channels * sizeof(float),
                     /*toHost=*/true);
}

Status CudaDevice::channelAffine(View<const float> x, const float *center,
                                 const float *scale, const float *shift,
                                 View<float> y) {
  ChannelExtents e;
  float *dev;
  if (Status st = channelVectors(x.shape, {center, scale, shift}, e, &dev); !st)
    return st;
  cuda::channelAffine(compute, x.data, dev, dev + e.channels,
                      dev + 2 * e.channels, y.data, x.numel(), e.channels,
                      e.size);
  return launched("channel_affine");
}

Status CudaDevice::channelGradSums(View<const float> x, View<const float> dy,
                                   const float *center, const float *invstd,
                                   float *sums) {
  ChannelExtents e;
  float *dev;
  if (Status st =
          channelVectors(x.shape, {center, invstd, nullptr, nullptr}, e, &dev);
      !st)
    return st;
  cuda::channelGradSums(compute, x.data, dy.data, dev, dev + e.channels,
                        dev + 2 * e.channels, e.rows, e.channels, e.size);
  if (Status st = launched("channel_grad_sums"); !st)
    return st;
  return copyAndWait(sums, dev + 2 * e.channels, 2 * e.channels * sizeof(float),
                     /*toHost=*/true);
}

Status CudaDevice::channelGradInput(View<const float> x, View<const float> dy,
                                    const float *center, const float *a,
                                    const float *b, const float *d,
                                    View<float> dx) {
  ChannelExtents e;
  float *dev;
  if (Status st = channelVectors(x.shape, {center, a, b, d}, e, &dev); !st)
    return st;
  cuda::channelGradInput(compute, x.data, dy.data, dev, dev + e.channels,
                         dev + 2 * e.channels, dev + 3 * e.channels, dx.data,
                         x.numel(), e.channels, e.size);
  return launched("channel_grad_input");
}

Status CudaDevice::layerNorm(View<const float> x, View<const float> gamma,
                             View<const float> beta, double eps,
                             View<float> y) {
  if (Status st = enter(); !st)
    return st;
  int64_t width = x.shape.back(), rows = width ? x.numel() / width : 0;
  void *stats;
  if (Status st = scratch(0, 2 * rows * sizeof(float), &stats); !st)
    return st;
  float *mean = static_cast<float *>(stats), *rstd = mean + rows;
  cuda::layerNorm(compute, x.data, gamma.data, beta.data,
                  static_cast<float>(eps), y.data, mean, rstd, rows, width);
  return launched("layernorm");
}

Status CudaDevice::rope(View<const float> x, int64_t first, double theta,
                        const RopeScaling *scaling, bool inverse,
                        View<float> y) {
  if (Status st = enter(); !st)
    return st;
  const size_t rank = x.shape.size();
  int64_t width = x.shape[rank - 1], rows = width ? x.numel() / width : 0;
  cuda::rope(compute, x.data, first, static_cast<float>(theta), scaling,
             inverse, y.data, rows, x.shape[rank - 2], width);
  return launched("rope");
}

Status CudaDevice::rmsNorm(View<const float> x, View<const float> weight,
                           double eps, View<float> y) {
  if (Status st = enter(); !st)
    return st;
  int64_t width = x.shape.back(), rows = width ? x.numel() / width : 0;
  void *rstd;
  if (Status st = scratch(0, rows * sizeof(float), &rstd); !st)
    return st;
  cuda::rmsNorm(compute, x.data, weight.data, static_cast<float>(eps), y.data,
                static_cast<float *>(rstd), rows, width);
  return launched("rms_norm");
}

Status CudaDevice::rmsNormBackward(View<const float> x,
                                   View<const float> weight, double eps,
                                   View<const float> dy, View<float> dx,
                                   View<float> dweight) {
  if (Status st = enter(); !st)
    return st;
  int64_t width = x.shape.back(), rows = width ? x.numel() / width : 0;
  void *rstd, *y;
  if (Status st = scratch(0, rows * sizeof(float), &rstd); !st)
    return st;
  if (Status st = scratch(1, x.numel() * sizeof(float), &y); !st)
    return st;
  float *partials;
  if (Status st = columnScratch(rows, width, 1, partials); !st)
    return st;
  // The forward's rstd again; its output goes to scratch.
  cuda::rmsNorm(compute, x.data, weight.data, static_cast<float>(eps),
                static_cast<float *>(y), static_cast<float *>(rstd), rows,
                width);
  cuda::rmsNormGrad(compute, x.data, weight.data,
                    static_cast<const float *>(rstd), dy.data, dx.data,
                    dweight.data, rows, width, partials);
  return launched("rms_norm_grad");
}

Status CudaDevice::layerNormGradInOnePass(View<const float> x,
                                          View<const float> gamma, double eps,
                                          View<const float> dy,
                                          const float *residual, View<float> dx,
                                          View<float> dgamma, View<float> dbeta,
                                          bool &ran) {
  ran = false;
  if (Status st = enter(); !st)
    return st;
  int64_t width = x.shape.back(), rows = width ? x.numel() / width : 0;
  if (width == 0 || width > kLayerNormRowMax)
    return Status::ok();
  void *partials;
  if (Status st =
          scratch(kLayerNormScratch,
                  layerNormGradScratch(rows, width) * sizeof(float), &partials);
      !st)
    return st;
  layerNormGradFused(compute, x.data, gamma.data, dy.data, residual,
                     static_cast<float>(eps), dx.data, dgamma.data, dbeta.data,
                     rows, width, static_cast<float *>(partials));
  ran = true;
  return launched("layernorm_grad");
}

Status CudaDevice::layerNormBackward(View<const float> x,
                                     View<const float> gamma, double eps,
                                     View<const float> dy, View<float> dx,
                                     View<float> dgamma, View<float> dbeta) {
  bool ran;
  if (Status st = layerNormGradInOnePass(x, gamma, eps, dy, nullptr, dx, dgamma,
                                         dbeta, ran);
      !st || ran)
    return st;
  int64_t width = x.shape.back(), rows = width ? x.numel() / width : 0;
  void *stats, *y;
  if (Status st = scratch(0, 2 * rows * sizeof(float), &stats); !st)
    return st;
  if (Status st = scratch(1, x.numel() * sizeof(float), &y); !st)
    return st;
  float *partials;
  if (Status st = columnScratch(rows, width, 2, partials); !st)
    return st;
  float *mean = static_cast<float *>(stats), *rstd = mean + rows;
  // The forward statistics again; its output goes to scratch.
  cuda::layerNorm(compute, x.data, gamma.data, nullptr, static_cast<float>(eps),
                  static_cast<float *>(y), mean, rstd, rows, width);
  layerNormGrad(compute, x.data, gamma.data, mean, rstd, dy.data, dx.data,
                dgamma.data, dbeta.data, rows, width, partials);
  return launched("layernorm_grad");
}

Status CudaDevice::layerNormBackwardResidual(View<const float> x,
                                             View<const float> gamma,
                                             double eps, View<const float> dy,
                                             View<const float> residual,
                                             View<float> dx, View<float> dgamma,
                                             View<float> dbeta) {
  bool ran;
  if (Status st = layerNormGradInOnePass(x, gamma, eps, dy, residual.data, dx,
                                         dgamma, dbeta, ran);
      !st || ran)
    return st;
  return Device::layerNormBackwardResidual(x, gamma, eps, dy, residual, dx,
                                           dgamma, dbeta);
}

Status CudaDevice::embedding(View<const float> table, IndexView ids,
                             View<float> out) {
  if (Status st = enter(); !st)
    return st;
  DataError *record;
  if (Status st = clearDataError(&record); !st)
    return st;
  int64_t vocab = table.shape[0], width = table.shape[1];
  if (ids.numel() * width > 0)
    cuda::embedding(compute, table.data, ids.data, ids.wide, out.data,
                    ids.numel(), vocab, width, record);
  return takeDataError(record, "embedding id", vocab);
}

Status CudaDevice::embeddingBackward(IndexView ids, View<const float> dout,
                                     View<float> dtable) {
  if (Status st = enter(); !st)
    return st;
  if (Status st = fill(dtable.data, DType::F32, dtable.numel(), 0); !st)
    return st;
  DataError *record;
  if (Status st = clearDataError(&record); !st)
    return st;
  int64_t vocab = dtable.shape[0], width = dtable.shape[1];
  if (ids.numel() * width > 0)
    embeddingGrad(compute, ids.data, ids.wide, dout.data, dtable.data,
                  ids.numel(), vocab, width, record);
  return takeDataError(record, "embedding id", vocab);
}

// The loss and its gradient on logits stored as float or bf16 (amp's
// storage, widened as the kernels load them): a label outside
// [0, classes) is reported after the kernel, as an embedding's id is.
template <typename Launch>
Status CudaDevice::labelled(int64_t classes, Launch launch) {
  if (Status st = enter(); !st)
    return st;
  DataError *record;
  if (Status st = clearDataError(&record); !st)
    return st;
  launch(record);
  return takeDataError(record, "label", classes);
}

template <typename T>
Status CudaDevice::crossEntropyOf(View<const T> logits, IndexView labels,
                                  View<float> loss) {
  const int64_t classes = logits.shape.back();
  return labelled(classes, [&](DataError *record) {
    cuda::crossEntropy(compute, logits.data, labels.data, labels.wide,
                       loss.data, labels.numel(), classes, record);
  });
}

template <typename T>
Status CudaDevice::crossEntropyBackwardOf(View<const T> logits,
                                          IndexView labels,
                                          View<const float> dloss,
                                          View<float> dlogits) {
  const int64_t classes = logits.shape.back();
  return labelled(classes, [&](DataError *record) {
    crossEntropyGrad(compute, logits.data, labels.data, labels.wide, dloss.data,
                     dlogits.data, labels.numel(), classes, record);
  });
}

Status CudaDevice::crossEntropy(View<const float> logits, IndexView labels,
                                View<float> loss) {
  return crossEntropyOf(logits, labels, loss);
}

Status CudaDevice::crossEntropyBf16(View<const uint16_t> logits,
                                    IndexView labels, View<float> loss) {
  return crossEntropyOf(logits, labels, loss);
}

Status CudaDevice::crossEntropyBackward(View<const float> logits,
                                        IndexView labels,
                                        View<const float> dloss,
                                        View<float> dlogits) {
  return crossEntropyBackwardOf(logits, labels, dloss, dlogits);
}

Status CudaDevice::crossEntropyBackwardBf16(View<const uint16_t> logits,
                                            IndexView labels,
                                            View<const float> dloss,
                                            View<float> dlogits) {
  return crossEntropyBackwardOf(logits, labels, dloss, dlogits);
}

Status CudaDevice::crossEntropyBackwardRounded(MixedIn logits, IndexView labels,
                                               View<const float> dloss,
                                               View<uint16_t> rounded,
                                               View<float> sum) {
  const int64_t classes = logits.shape.back(), rows = labels.numel();
  const int64_t width = sum.numel();
  if (Status st = enter(); !st)
    return st;
  if (width == 0)
    return Status::ok();
  if (rows * classes == 0) {
    fillF32(compute, sum.data, width, 0.0f);
    return launched("cross_entropy_grad_rounded");
  }
  void *lse;
  if (Status st = scratch(kLossLseScratch, rows * sizeof(float), &lse); !st)
    return st;
  float *partials;
  if (Status st = columnScratch(rows * classes / width, width, 1, partials);
      !st)
    return st;
  return labelled(classes, [&](DataError *record) {
    auto launch = [&](const auto *data) {
      crossEntropyGradRounded(compute, data, labels.data, labels.wide,
                              dloss.data, static_cast<float *>(lse),
                              rounded.data, sum.data, rows, classes, width,
                              partials, record);
    };
    if (logits.dtype == DType::BF16)
      launch(static_cast<const uint16_t *>(logits.data));
    else
      launch(static_cast<const float *>(logits.data));
  });
}

//===----------------------------------------------------------------------===//
// Reductions and layout
//===----------------------------------------------------------------------===//

Status CudaDevice::reduce(ReduceOp op, View<const float> x,
                          const std::vector<int64_t> &axes, View<float> out) {
  if (Status st = enter(); !st)
    return st;
  if (Status st = rankFits(x.shape, "reduce"); !st)
    return st;
  int64_t kept, count;
  Walk w = reduceWalk(x.shape, axes, kept, count);
  // A sum or mean over leading axes (a loss's mean, a bias-like sum) is a
  // sum over rows: coalesced, and split among blocks (ColumnSums.h).
  bool leading = op != ReduceOp::Max && count > 1;
  for (size_t i = 0; i < axes.size(); ++i)
    leading = leading && axes[i] == static_cast<int64_t>(i);
  if (kept > 0 && leading) {
    float *partials;
    if (Status st = columnScratch(count, kept, 1, partials); !st)
      return st;
    sumRows(compute, x.data, out.data, count, kept,
            op == ReduceOp::Mean ? static_cast<float>(count) : 1.0f, partials);
  } else if (kept > 0) {
    cuda::reduce(compute, static_cast<int>(op), x.data, out.data, w, kept,
                 count);
  }
  return launched("reduce");
}

Status CudaDevice::reduceBackward(ReduceOp op, View<const float> x,
                                  const std::vector<int64_t> &axes,
                                  View<const float> dout, View<float> dx) {
  if (Status st = enter(); !st)
    return st;
  if (Status st = rankFits(x.shape, "reduce_grad"); !st)
    return st;
  int64_t kept, count;
  Walk w = reduceWalk(x.shape, axes, kept, count);
  if (kept > 0)
    reduceGrad(compute, static_cast<int>(op), x.data, dout.data, dx.data, w,
               kept, count);
  return launched("reduce_grad");
}

Status CudaDevice::transpose(View<const float> x,
                             const std::vector<int64_t> &perm,
                             View<float> out) {
  if (Status st = enter(); !st)
    return st;
  if (Status st = rankFits(x.shape, "transpose"); !st)
    return st;
  if (out.numel() > 0)
    gather(compute, x.data, out.data, transposeMap(x.shape, perm), out.numel());
  return launched("transpose");
}

namespace {

cudaError_t copy2D(cudaStream_t s, void *dst, const void *src,
                   const Copy2D &c) {
  if (c.width == 0 || c.rows == 0)
    return cudaSuccess;
  return cudaMemcpy2DAsync(static_cast<char *>(dst) + c.dstOffset, c.dstPitch,
                           static_cast<const char *>(src) + c.srcOffset,
                           c.srcPitch, c.width, c.rows,
                           cudaMemcpyDeviceToDevice, s);
}

} // namespace

Status CudaDevice::slice(const void *x, const Shape &xShape,
                         int64_t elementBytes, int64_t axis, int64_t start,
                         int64_t end, void *out) {
  if (Status st = enter(); !st)
    return st;
  return cudaFailed(
      copy2D(compute, out, x,
             rangeCopy(xShape, axis, start, end - start, elementBytes, true)),
      name() + ": slice");
}

Status CudaDevice::sliceBackward(View<const float> dout, int64_t axis,
                                 int64_t start, View<float> dx) {
  if (Status st = fill(dx.data, DType::F32, dx.numel(), 0); !st)
    return st;
  return cudaFailed(copy2D(compute, dx.data, dout.data,
                           rangeCopy(dx.shape, axis, start, dout.shape[axis],
                                     sizeof(float), false)),
                    name() + ": slice_grad");
}

Status CudaDevice::concat(const std::vector<View<const float>> &inputs,
                          int64_t axis, View<float> out) {
  if (Status st = enter(); !st)
    return st;
  int64_t at = 0;
  for (const View<const float> &in : inputs) {
    int64_t len = in.shape[axis];
    if (Status st = cudaFailed(
            copy2D(compute, out.data, in.data,
                   rangeCopy(out.shape, axis, at, len, sizeof(float), false)),
            name() + ": concat");
        !st)
      return st;
    at += len;
  }
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// Optimizers and norms
//===----------------------------------------------------------------------===//

namespace {

SgdScalars sgdScalars(const SgdParams &p) {
  return {static_cast<float>(p.rate()), static_cast<float>(p.momentum),
          static_cast<float>(p.weightDecay)};
}

AdamScalars adamScalars(const AdamParams &p) {
  const double c1 = 1 - std::pow(p.beta1, static_cast<double>(p.step));
  const double c2 = 1 - std::pow(p.beta2, static_cast<double>(p.step));
  return {static_cast<float>(p.rate()),
          static_cast<float>(p.beta1),
          static_cast<float>(p.beta2),
          static_cast<float>(p.eps),
          static_cast<float>(p.weightDecay),
          p.decoupled,
          static_cast<float>(c1),
          static_cast<float>(c2)};
}

/// Adam's scalars for `p`, and where a captured step reads them afresh at
/// each replay (null: not captured, or not scheduled).
Status adamArguments(CudaStepGraph &graph, const AdamParams &p,
                     AdamScalars &now, const AdamScalars *&live) {
  now = adamScalars(p);
  live = nullptr;
  if (!p.scheduled)
    return Status::ok();
  return graph.live<AdamScalars>(
      now, [p](const TrainState &s) { return adamScalars(p.at(s)); }, &live);
}

} // namespace

Status CudaDevice::sgdStep(View<float> param, View<const float> grad,
                           float *velocity, const SgdParams &p) {
  if (Status st = enter(); !st)
    return st;
  const SgdScalars *live = nullptr;
  if (p.scheduled)
    if (Status st = stepGraph->live<SgdScalars>(
            sgdScalars(p),
            [p](const TrainState &s) { return sgdScalars(p.at(s)); }, &live);
        !st)
      return st;
  if (param.numel() > 0)
    cuda::sgdStep(compute, param.data, grad.data, velocity, param.numel(),
                  sgdScalars(p), live);
  return launched("sgd_update");
}

Status CudaDevice::adamStep(View<float> param, View<const float> grad, float *m,
                            float *v, const AdamParams &p) {
  if (Status st = enter(); !st)
    return st;
  AdamScalars now;
  const AdamScalars *live;
  if (Status st = adamArguments(*stepGraph, p, now, live); !st)
    return st;
  if (param.numel() > 0)
    cuda::adamStep(compute, param.data, grad.data, m, v, param.numel(), now,
                   live);
  return launched("adam_update");
}

Status CudaDevice::adamSteps(const std::vector<AdamSlot> &slots,
                             const AdamParams &p) {
  if (Status st = enter(); !st)
    return st;
  AdamScalars now;
  const AdamScalars *live;
  if (Status st = adamArguments(*stepGraph, p, now, live); !st)
    return st;
  std::vector<cuda::AdamTensor> tensors;
  for (const AdamSlot &s : slots)
    tensors.push_back({s.param.data, s.grad.data, s.m, s.v, s.param.numel()});
  cuda::adamSteps(compute, tensors, now, live);
  return launched("adam_update");
}

Status CudaDevice::squaresOnDevice(const std::vector<View<float>> &views,
                                   double *&partials) {
  if (Status st = enter(); !st)
    return st;
  // kSquareBlocks partials, then the sum (or the norm) and clipping's
  // factor.
  void *buffer;
  if (Status st = scratch(2, (kSquareBlocks + 2) * sizeof(double), &buffer);
      !st)
    return st;
  partials = static_cast<double *>(buffer);
  if (Status st = cudaFailed(
          cudaMemsetAsync(partials, 0, kSquareBlocks * sizeof(double), compute),
          name() + ": sum of squares");
      !st)
    return st;
  std::vector<std::pair<const float *, int64_t>> xs;
  for (const View<float> &v : views)
    xs.emplace_back(v.data, v.numel());
  sumSquaresPartials(compute, xs, partials);
  return Status::ok();
}

Status CudaDevice::sumSquares(const std::vector<View<float>> &views,
                              double &out) {
  double *partials;
  if (Status st = squaresOnDevice(views, partials); !st)
    return st;
  sumPartials(compute, partials, partials + kSquareBlocks);
  if (Status st = launched("sum of squares"); !st)
    return st;
  return copyToHost(&out, partials + kSquareBlocks, sizeof(double));
}

Status CudaDevice::clipNorm(const std::vector<View<float>> &views,
                            double maxNorm) {
  double *partials;
  if (Status st = squaresOnDevice(views, partials); !st)
    return st;
  double *norm = partials + kSquareBlocks;
  float *factor = reinterpret_cast<float *>(norm + 1);
  clipFactor(compute, partials, maxNorm, norm, factor);
  std::vector<std::pair<float *, int64_t>> xs;
  for (const View<float> &v : views)
    xs.emplace_back(v.data, v.numel());
  cuda::scaleBy(compute, xs, factor);
  return launched("clip_grad_norm");
}

Status CudaDevice::scale(const std::vector<View<float>> &views, double factor) {
  if (Status st = enter(); !st)
    return st;
  for (const View<float> &v : views)
    if (v.numel() > 0)
      cuda::scale(compute, v.data, v.numel(), static_cast<float>(factor));
  return launched("scale");
}

Status CudaDevice::allFinite(View<const float> x, bool &finite) {
  if (Status st = enter(); !st)
    return st;
  void *flag;
  if (Status st = scratch(3, sizeof(int), &flag); !st)
    return st;
  int found = 0;
  Status st = cudaFailed(cudaMemsetAsync(flag, 0, sizeof(int), compute),
                         name() + ": finite check");
  if (st && x.numel() > 0) {
    findNonFinite(compute, x.data, x.numel(), static_cast<int *>(flag));
    st = launched("finite check");
  }
  if (st)
    st = copyToHost(&found, flag, sizeof(int));
  finite = found == 0;
  return st;
}

namespace {
/// q [..., T, E] against k and v [..., Tk, E] (or [..., T, H, E]) as heads
/// of rows.
template <class T>
Status attentionDims(const char *op, View<const T> q, View<const T> k,
                     View<const T> v, double scale, AttentionForm form,
                     AttentionDims &d) {
  AttentionShape shape;
  if (Status st = attentionShape(op, q, k, v, form, shape); !st)
    return st;
  d.heads = shape.heads;
  d.t = shape.t;
  d.tk = shape.tk;
  d.e = shape.e;
  d.scale = static_cast<float>(scale);
  d.causal = form.causal;
  d.groupHeads = shape.groupHeads;
  d.kvGroup = shape.kvGroup;
  return Status::ok();
}
} // namespace

// Attention's scratch: a chunk's scores (or probabilities) and their
// gradient, each capped so that long sequences go in more chunks rather
// than more memory; under amp also their bf16 copies (q, k, v and dout
// take the matmul inputs' slots: gemmInputs).
constexpr int kScoresScratch = 18, kScoreGradScratch = 19;
constexpr int kProbabilitiesBf16Scratch = 21, kScoreGradBf16Scratch = 22;
// The flash backward's per-row statistics: log-sum-exp and dO . O.
constexpr int kFlashLseScratch = 23, kFlashRowDotScratch = 24;
// The flash backward's bf16 copy of dout on amp's storage (fp32 stored).
constexpr int kAttentionDoutBf16Scratch = 29;
// A fused region's partial sums (fused::termParts).
constexpr int kFusedPartsScratch = 20;

namespace {
/// `base` moved on by `elements` of fp32, or of bf16 under amp.
const void *advance(const void *base, int64_t elements, bool bf16) {
  return static_cast<const char *>(base) + elements * (bf16 ? 2 : 4);
}
} // namespace

Status CudaDevice::attentionScores(const AttentionDims &d, int64_t heads,
                                   const void *q, const void *k,
                                   float *scores) {
  const bool bf16 = matmulPrecision() == MatmulPrecision::BF16;
  if (Status st =
          runGemms({scoresGemm(d, heads)},
                   GemmBuffers{q, k, nullptr, nullptr, nullptr, scores, bf16});
      !st)
    return st;
  attentionSoftmax(compute, d, scores, heads * d.t);
  return launched("attention softmax");
}

Status CudaDevice::attention(View<const float> q, View<const float> k,
                             View<const float> v, double scale,
                             AttentionForm form, View<float> out) {
  AttentionDims d;
  if (Status st = attentionDims("attention", q, k, v, scale, form, d); !st)
    return st;
  if (d.kvGroup > 1)
    return attentionOverRepeatedKeys(*this, q, k, v, scale, form, out);
  if (Status st = enter(); !st)
    return st;
  if (d.heads * d.t * d.e == 0)
    return Status::ok();
  if (d.tk == 0) { // no key: the softmax of nothing weighs nothing
    fillF32(compute, out.data, out.numel(), 0);
    return launched("attention");
  }
  // Under amp the products take bf16 operands, as matmuls do (the CPU's
  // attention rounds the same ones).
  const bool bf16 = matmulPrecision() == MatmulPrecision::BF16;
  const bool flash =
      flashAttentionRequested() &&
      (bf16 ? flashForwardTiles(d.e).dim : flashForwardTilesF32(d.e).dim);
  // The flash kernels read sequence-major operands in place; the chunked
  // GEMMs batch heads at one stride, so for them such operands are
  // permuted to head-major ones and back (Device's composition).
  if (d.groupHeads && !flash)
    return Device::attention(q, k, v, scale, form, out);
  const int64_t chunk = headsPerChunk(d, kMaxAttentionScores);
  const void *in[3];
  if (Status st = gemmInputs({q, k, v}, in); !st)
    return st;
  if (flash && bf16)
    return cudaFailed(
        flashForward(compute, d, in[0], in[1], in[2], out.data, nullptr),
        name() + ": attention (flash)");
  if (flash)
    return cudaFailed(
        flashForwardF32(compute, d, q.data, k.data, v.data, out.data, nullptr),
        name() + ": attention (flash, fp32)");
  const void *qm = in[0], *km = in[1], *vm = in[2];
  void *buffer, *p16 = nullptr;
  if (Status st =
          scratch(kScoresScratch, chunk * d.t * d.tk * sizeof(float), &buffer);
      !st)
    return st;
  if (bf16)
    if (Status st =
            scratch(kProbabilitiesBf16Scratch, chunk * d.t * d.tk * 2, &p16);
        !st)
      return st;
  float *p = static_cast<float *>(buffer);
  for (int64_t h = 0; h < d.heads; h += chunk) {
    const int64_t n = std::min(chunk, d.heads - h);
    if (Status st = attentionScores(d, n, advance(qm, h * d.t * d.e, bf16),
                                    advance(km, h * d.tk * d.e, bf16), p);
        !st)
      return st;
    const void *pm = p;
    if (bf16) {
      castToBf16(compute, p, p16, n * d.t * d.tk);
      pm = p16;
    }
    if (Status st = runGemms({outputGemm(d, n)},
                             GemmBuffers{pm, advance(vm, h * d.tk * d.e, bf16),
                                         nullptr, nullptr, nullptr,
                                         out.data + h * d.t * d.e, bf16});
        !st)
      return st;
  }
  return launched("attention");
}

namespace {
/// Whether attention_grad has nothing to compute: no element, or no query
/// or key to attend (then no gradient flows, and dq, dk, dv are zeroed).
bool nothingAttended(cudaStream_t s, const AttentionDims &d, View<float> dq,
                     View<float> dk, View<float> dv) {
  if (d.heads * d.e == 0)
    return true;
  if (d.t != 0 && d.tk != 0)
    return false;
  fillF32(s, dq.data, dq.numel(), 0);
  fillF32(s, dk.data, dk.numel(), 0);
  fillF32(s, dv.data, dv.numel(), 0);
  return true;
}
} // namespace

Status CudaDevice::attentionBackward(View<const float> q, View<const float> k,
                                     View<const float> v, View<const float> out,
                                     View<const float> dout, double scale,
                                     AttentionForm form, View<float> dq,
                                     View<float> dk, View<float> dv) {
  AttentionDims d;
  if (Status st = attentionDims("attention_grad", q, k, v, scale, form, d); !st)
    return st;
  if (d.kvGroup > 1)
    return attentionBackwardOverRepeatedKeys(*this, q, k, v, out, dout, scale,
                                             form, dq, dk, dv);
  if (Status st = enter(); !st)
    return st;
  if (nothingAttended(compute, d, dq, dk, dv))
    return launched("attention_grad");
  const bool bf16 = matmulPrecision() == MatmulPrecision::BF16;
  const bool flash =
      flashAttentionRequested() &&
      (bf16 ? flashBackwardTiles(d.e).dim : flashBackwardTilesF32(d.e).dim);
  if (d.groupHeads && !flash) // as the forward: permuted for the GEMMs
    return Device::attentionBackward(q, k, v, out, dout, scale, form, dq, dk,
                                     dv);
  const int64_t chunk = headsPerChunk(d, kMaxAttentionScores);
  const size_t bytes = chunk * d.t * d.tk * sizeof(float);
  const void *in[4];
  if (Status st = gemmInputs({q, k, v, dout}, in); !st)
    return st;
  const void *qm = in[0], *km = in[1], *vm = in[2], *dom = in[3];
  if (flash) {
    // The forward's statistics again (the op keeps only its output), then
    // the gradients with the scores recomputed tile by tile.
    void *lse, *rowD;
    const size_t rows = sizeof(float) * d.heads * d.t;
    if (Status st = scratch(kFlashLseScratch, rows, &lse); !st)
      return st;
    if (Status st = scratch(kFlashRowDotScratch, rows, &rowD); !st)
      return st;
    float *lseF = static_cast<float *>(lse),
          *rowDF = static_cast<float *>(rowD);
    const cudaError_t stats =
        bf16 ? flashForward(compute, d, qm, km, vm, nullptr, lseF)
             : flashForwardF32(compute, d, q.data, k.data, v.data, nullptr,
                               lseF);
    if (Status st =
            cudaFailed(stats, name() + ": attention_grad's statistics (flash)");
        !st)
      return st;
    return cudaFailed(bf16 ? flashBackward(compute, d, qm, km, vm, dom,
                                           out.data, dout.data, lseF, rowDF,
                                           dq.data, dk.data, dv.data)
                           : flashBackwardF32(compute, d, q.data, k.data,
                                              v.data, out.data, dout.data, lseF,
                                              rowDF, dq.data, dk.data, dv.data),
                      name() + ": attention_grad (flash)");
  }
  void *pBuffer, *dsBuffer, *p16 = nullptr, *ds16 = nullptr;
  if (Status st = scratch(kScoresScratch, bytes, &pBuffer); !st)
    return st;
  if (Status st = scratch(kScoreGradScratch, bytes, &dsBuffer); !st)
    return st;
  if (bf16) {
    if (Status st = scratch(kProbabilitiesBf16Scratch, bytes / 2, &p16); !st)
      return st;
    if (Status st = scratch(kScoreGradBf16Scratch, bytes / 2, &ds16); !st)
      return st;
  }
  float *p = static_cast<float *>(pBuffer),
        *ds = static_cast<float *>(dsBuffer);
  for (int64_t h = 0; h < d.heads; h += chunk) {
    const int64_t n = std::min(chunk, d.heads - h), scores = n * d.t * d.tk;
    const int64_t qAt = h * d.t * d.e, kAt = h * d.tk * d.e;
    const void *qh = advance(qm, qAt, bf16), *kh = advance(km, kAt, bf16),
               *vh = advance(vm, kAt, bf16), *doh = advance(dom, qAt, bf16);
    if (Status st = attentionScores(d, n, qh, kh, p); !st)
      return st;
    const void *pm = p, *dsm = ds;
    if (bf16) {
      castToBf16(compute, p, p16, scores);
      pm = p16;
    }
    // dV = P^T dO and dP = dO V^T, then dS in dP's place.
    GemmBuffers dvBuf{pm, doh, nullptr, nullptr, nullptr, dv.data + kAt, bf16};
    GemmBuffers dpBuf{doh, vh, nullptr, nullptr, nullptr, ds, bf16};
    if (Status st = runGemms({valueGradGemm(d, n)}, dvBuf); !st)
      return st;
    if (Status st = runGemms({probabilityGradGemm(d, n)}, dpBuf); !st)
      return st;
    attentionScoreGrad(compute, d, p, ds, dout.data + qAt, out.data + qAt,
                       n * d.t);
    if (bf16) {
      castToBf16(compute, ds, ds16, scores);
      dsm = ds16;
    }
    if (Status st = launched("attention score gradient"); !st)
      return st;
    // dQ = dS K and dK = dS^T Q.
    GemmBuffers dqBuf{dsm, kh, nullptr, nullptr, nullptr, dq.data + qAt, bf16};
    GemmBuffers dkBuf{dsm, qh, nullptr, nullptr, nullptr, dk.data + kAt, bf16};
    if (Status st = runGemms({queryGradGemm(d, n)}, dqBuf); !st)
      return st;
    if (Status st = runGemms({keyGradGemm(d, n)}, dkBuf); !st)
      return st;
  }
  return Status::ok();
}

// amp's storage: the flash kernels read the bf16 operands as they are
// stored, with no copy, and the forward stores its output in bf16 itself.
// Without a flash kernel for the width, the composition
// (ComposedBf16Attention.cpp) widens them for the fp32 attention above.

Status CudaDevice::attentionBf16(View<const uint16_t> q, View<const uint16_t> k,
                                 View<const uint16_t> v, double scale,
                                 AttentionForm form, MixedOut out) {
  AttentionDims d;
  if (Status st = attentionDims("attention", q, k, v, scale, form, d); !st)
    return st;
  // Grouped keys: widened, then repeated by the fp32 attention above.
  if (d.kvGroup > 1 || !flashAttentionRequested() ||
      !flashForwardTiles(d.e).dim)
    return Device::attentionBf16(q, k, v, scale, form, out);
  if (Status st = enter(); !st)
    return st;
  if (d.heads * d.t * d.e == 0)
    return Status::ok();
  if (d.tk == 0) // no key: the softmax of nothing weighs nothing
    return fill(out.data, out.dtype, numElements(out.shape), 0);
  const bool bf16Out = out.dtype == DType::BF16;
  return cudaFailed(
      flashForward(compute, d, q.data, k.data, v.data,
                   bf16Out ? nullptr : static_cast<float *>(out.data), nullptr,
                   bf16Out ? out.data : nullptr),
      name() + ": attention (flash, bf16 storage)");
}

Status CudaDevice::attentionBackwardBf16(
    View<const uint16_t> q, View<const uint16_t> k, View<const uint16_t> v,
    View<const uint16_t> out, View<const float> dout, double scale,
    AttentionForm form, View<float> dq, View<float> dk, View<float> dv) {
  AttentionDims d;
  if (Status st = attentionDims("attention_grad", q, k, v, scale, form, d); !st)
    return st;
  if (d.kvGroup > 1 || !flashAttentionRequested() ||
      !flashBackwardTiles(d.e).dim)
    return Device::attentionBackwardBf16(q, k, v, out, dout, scale, form, dq,
                                         dk, dv);
  if (Status st = enter(); !st)
    return st;
  if (nothingAttended(compute, d, dq, dk, dv))
    return launched("attention_grad");
  // dout is fp32 (a gradient GEMM's result); the kernel's products take
  // its bf16 copy, D = dO . O the fp32 values.
  void *dout16, *lse, *rowD;
  const size_t rows = sizeof(float) * d.heads * d.t;
  if (Status st = scratch(kAttentionDoutBf16Scratch, dout.numel() * 2, &dout16);
      !st)
    return st;
  if (Status st = scratch(kFlashLseScratch, rows, &lse); !st)
    return st;
  if (Status st = scratch(kFlashRowDotScratch, rows, &rowD); !st)
    return st;
  castToBf16(compute, dout.data, dout16, dout.numel());
  float *lseF = static_cast<float *>(lse), *rowDF = static_cast<float *>(rowD);
  if (Status st = cudaFailed(
          flashForward(compute, d, q.data, k.data, v.data, nullptr, lseF),
          name() + ": attention_grad's statistics (flash, bf16 storage)");
      !st)
    return st;
  return cudaFailed(flashBackward(compute, d, q.data, k.data, v.data, dout16,
                                  out.data, dout.data, lseF, rowDF, dq.data,
                                  dk.data, dv.data, /*outBf16=*/true),
                    name() + ": attention_grad (flash, bf16 storage)");
}

cudaKernel_t CudaDevice::elementKernel(const fused::Layout &layout,
                                       const std::vector<fused::Instr> &code) {
  if (kernelsUnavailable)
    return nullptr;
  const char *wanted = std::getenv("WHALE_CUDA_ELEMENT_KERNELS");
  std::string source, why;
  if ((wanted && std::string(wanted) == "0") ||
      !fused::elementKernelSource(layout, code, source, why))
    return nullptr; // by request: the interpreter runs it
  if (auto found = kernelsBySource.find(source); found != kernelsBySource.end())
    return found->second;
  auto giveUp = [&](const std::string &reason) -> cudaKernel_t {
    std::fprintf(stderr,
                 "whale: %s: fused regions run in the interpreter: %s\n",
                 name().c_str(), reason.c_str());
    kernelsUnavailable = true;
    return nullptr;
  };
  Nvrtc *nvrtc = Nvrtc::get(why);
  if (!nvrtc)
    return giveUp(why);
  int major = 0, minor = 0;
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, ordinal);
  cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, ordinal);
  std::vector<char> cubin;
  if (!nvrtc->compile(source, "sm_" + std::to_string(major * 10 + minor), cubin,
                      why))
    return giveUp(why);
  cudaLibrary_t library = nullptr;
  cudaKernel_t kernel = nullptr;
  if (cudaLibraryLoadData(&library, cubin.data(), nullptr, nullptr, 0, nullptr,
                          nullptr, 0) != cudaSuccess ||
      cudaLibraryGetKernel(&kernel, library, fused::kElementKernelName) !=
          cudaSuccess) {
    const std::string reason = cudaGetErrorString(cudaGetLastError());
    if (library)
      cudaLibraryUnload(library);
    return giveUp("loading NVRTC's cubin: " + reason);
  }
  libraries.push_back(library);
  kernelsBySource.emplace(std::move(source), kernel);
  return kernel;
}

Status CudaDevice::fused(const FusedCode &code, void **data, int64_t, int64_t) {
  if (!code.program)
    return Status::invalid(name() + ": a fused region without an element "
                                    "program cannot run on a GPU");
  if (Status st = enter(); !st)
    return st;
  auto it = programs.find(code.program);
  if (it == programs.end()) {
    LoadedProgram loaded;
    std::vector<fused::Instr> host;
    std::string why;
    if (!fused::parse(code.program, code.programWords, loaded.layout, host,
                      why))
      return Status::invalid(name() + ": " + why);
    loaded.count = static_cast<int>(host.size());
    const size_t bytes = std::max<size_t>(1, host.size()) * sizeof host[0];
    if (Status st = cudaFailed(cudaMalloc(&loaded.code, bytes),
                               name() + ": cudaMalloc for an element program");
        !st)
      return st;
    // A blocking copy: `host` goes when this returns.
    if (Status st = cudaFailed(cudaMemcpy(loaded.code, host.data(),
                                          host.size() * sizeof host[0],
                                          cudaMemcpyHostToDevice),
                               name() + ": copying an element program");
        !st) {
      cudaFree(loaded.code);
      return st;
    }
    loaded.kernel = elementKernel(loaded.layout, host);
    it = programs.emplace(code.program, loaded).first;
  }
  const LoadedProgram &p = it->second;
  std::string why;
  if (!code.elements || !fused::fitsOperands(p.layout, code.elements,
                                             code.inputs + code.outputs, why))
    return Status::invalid(name() + ": " +
                           (code.elements ? why : "no operand sizes"));
  FusedOperands operands{};
  for (int i = 0; i < p.layout.inputs + p.layout.outputs; ++i)
    operands.data[i] = data[i];
  if (p.layout.threads <= 0)
    return Status::ok();
  // Enough threads to fill a GPU (an H100 holds 2,048 on each of 132 SMs).
  constexpr int64_t kWantedThreads = int64_t(1) << 18;
  const int64_t parts = fused::termParts(p.layout, kWantedThreads);
  void *partials = nullptr;
  if (parts > 1) {
    const size_t bytes =
        p.layout.outputs * parts * p.layout.threads * sizeof(float);
    if (Status st = scratch(kFusedPartsScratch, bytes, &partials); !st)
      return st;
  }
  if (p.kernel)
    fusedKernel(compute, p.kernel, p.layout, operands, parts,
                static_cast<float *>(partials));
  else
    fusedProgram(compute, p.layout, p.code, p.count, operands, parts,
                 static_cast<float *>(partials));
  return launched("fused region");
}

//===----------------------------------------------------------------------===//
// Collectives on NCCL
//===----------------------------------------------------------------------===//

int CudaDevice::collectiveDevice() const {
#if WHALE_HAVE_NCCL
  return ordinal;
#else
  return -1;
#endif
}

Status CudaDevice::bucketCollective(BucketOp op, const std::string &key,
                                    int position, int size, float *data,
                                    const std::vector<int64_t> &parts,
                                    const ShareFromFirst &shareFromFirst) {
  int64_t ticket = 0;
  if (Status st = bucketCollectiveStart(op, key, position, size, data, parts,
                                        shareFromFirst, ticket);
      !st)
    return st;
  return bucketCollectiveWait(ticket);
}

Status CudaDevice::bucketCollectiveStart(BucketOp op, const std::string &key,
                                         int position, int size, float *data,
                                         const std::vector<int64_t> &parts,
                                         const ShareFromFirst &shareFromFirst,
                                         int64_t &ticket) {
#if WHALE_HAVE_NCCL
  ticket = 0;
  if (Status st = enter(); !st)
    return st;
  auto ncclFailed = [&](ncclResult_t r, const char *what) {
    return cuda::ncclFailed(r, name() + ": " + what);
  };
  auto it = ncclComms.find(key);
  if (it == ncclComms.end()) {
    ncclComm_t comm;
    if (Status st = joinNccl(name(), size, position, shareFromFirst, comm); !st)
      return st;
    it = ncclComms.emplace(key, comm).first;
  }
  if (!comms)
    if (Status st = newStream(comms, "creating the communication stream"); !st)
      return st;
  // The bucket was packed on the compute stream: NCCL starts after that.
  cudaEvent_t done = nullptr;
  Status st = streamWaits(name(), comms, compute);
  if (!st)
    return st;
  auto comm = static_cast<ncclComm_t>(it->second);
  if (op == BucketOp::AllToAll) {
    // Each part to its member and each member's part from it, grouped so
    // that no send waits on a receive posted after it.
    int64_t total = 0;
    for (int64_t p : parts)
      total += p;
    st = ncclFailed(ncclGroupStart(), "ncclGroupStart");
    ncclResult_t result = ncclSuccess;
    int64_t at = 0;
    for (int k = 0; st && k < size && result == ncclSuccess;
         at += parts[k], ++k) {
      const auto n = static_cast<size_t>(parts[k]);
      if (n == 0)
        continue;
      result = ncclSend(data + at, n, ncclFloat, k, comm, comms);
      if (result == ncclSuccess)
        result = ncclRecv(data + total + at, n, ncclFloat, k, comm, comms);
    }
    if (st) {
      ncclResult_t ended = ncclGroupEnd();
      st = ncclFailed(result, "ncclSend/ncclRecv");
      if (st)
        st = ncclFailed(ended, "ncclGroupEnd");
    }
  } else if (op == BucketOp::AllReduce) {
    int64_t n = 0;
    for (int64_t p : parts)
      n += p;
    st = ncclFailed(ncclAllReduce(data, data, static_cast<size_t>(n), ncclFloat,
                                  ncclSum, comm, comms),
                    "ncclAllReduce");
  } else {
    // One call per member's part, rooted there, fused into one launch.
    st = ncclFailed(ncclGroupStart(), "ncclGroupStart");
    float *at = data;
    ncclResult_t result = ncclSuccess;
    for (int k = 0; st && k < size && result == ncclSuccess;
         at += parts[k], ++k) {
      if (parts[k] == 0)
        continue;
      const auto n = static_cast<size_t>(parts[k]);
      result = op == BucketOp::ReduceToOwners
                   ? ncclReduce(at, at, n, ncclFloat, ncclSum, k, comm, comms)
                   : ncclBroadcast(at, at, n, ncclFloat, k, comm, comms);
    }
    if (st) {
      ncclResult_t ended = ncclGroupEnd();
      st = ncclFailed(result, op == BucketOp::ReduceToOwners ? "ncclReduce"
                                                             : "ncclBroadcast");
      if (st)
        st = ncclFailed(ended, "ncclGroupEnd");
    }
  }
  if (!st)
    return st;
  if (Status e =
          cudaFailed(cudaEventCreateWithFlags(&done, cudaEventDisableTiming),
                     name() + ": cudaEventCreate");
      !e)
    return e;
  if (Status e = cudaFailed(cudaEventRecord(done, comms),
                            name() + ": cudaEventRecord");
      !e) {
    cudaEventDestroy(done);
    return e;
  }
  ticket = nextTicket++;
  started.emplace(ticket, done);
  return Status::ok();
#else
  return Device::bucketCollectiveStart(op, key, position, size, data, parts,
                                       shareFromFirst, ticket);
#endif
}

Status CudaDevice::bucketCollectiveWait(int64_t ticket) {
  auto it = started.find(ticket);
  if (it == started.end())
    return ticket == 0 ? Status::ok()
                       : Status::invalid(name() + ": no collective " +
                                         std::to_string(ticket) +
                                         " was started, or it ended");
  if (Status st = enter(); !st)
    return st;
  // The compute stream's later work (the unpacking first) waits for the
  // collective; the host does not.
  Status st = cudaFailed(cudaStreamWaitEvent(compute, it->second, 0),
                         name() + ": cudaStreamWaitEvent");
  cudaEventDestroy(it->second);
  started.erase(it);
  return st;
}

Status CudaDevice::pairFor(const std::string &key, int position,
                           const ShareFromFirst &shareFromFirst, Pair *&out) {
  auto it = pairs.find(key);
  if (it != pairs.end()) {
    out = &it->second;
    return Status::ok();
  }
#if WHALE_HAVE_NCCL
  Pair pair;
  if (Status st = newStream(pair.stream, "creating a pipeline stream"); !st)
    return st;
  ncclComm_t comm = nullptr;
  if (Status st = joinNccl(name(), 2, position, shareFromFirst, comm); !st) {
    cudaStreamDestroy(pair.stream);
    return st;
  }
  pair.comm = comm;
  out = &pairs.emplace(key, pair).first->second;
  return Status::ok();
#else
  return Status::internal(name() + ": built without NCCL");
#endif
}

Status CudaDevice::pairSend(const std::string &key, const void *data,
                            int64_t bytes,
                            const ShareFromFirst &shareFromFirst) {
#if WHALE_HAVE_NCCL
  if (Status st = enter(); !st)
    return st;
  Pair *pair = nullptr;
  if (Status st = pairFor(key, 0, shareFromFirst, pair); !st)
    return st;
  if (bytes == 0)
    return Status::ok(); // the receiver posts nothing for it either
  // The copy is the compute stream's, so it reads the tensor before any
  // later op can overwrite it; the pair's stream sends and frees it.
  void *copy = nullptr;
  const auto n = static_cast<size_t>(bytes);
  if (Status st = cudaFailed(cudaMallocAsync(&copy, n, compute),
                             name() + ": the copy of a pipeline send");
      !st)
    return st;
  Status st = cudaFailed(
      cudaMemcpyAsync(copy, data, n, cudaMemcpyDeviceToDevice, compute),
      name() + ": copying a pipeline send");
  if (st)
    st = streamWaits(name(), pair->stream, compute);
  if (st)
    st = ncclFailed(ncclSend(copy, n, ncclUint8, 1,
                             static_cast<ncclComm_t>(pair->comm), pair->stream),
                    name() + ": ncclSend");
  // Freed after the send in the pair's stream order (or, failing, at once).
  if (Status freed =
          cudaFailed(cudaFreeAsync(copy, st ? pair->stream : compute),
                     name() + ": freeing a pipeline send's copy");
      st && !freed)
    st = freed;
  return st;
#else
  return Device::pairSend(key, data, bytes, shareFromFirst);
#endif
}

Status CudaDevice::pairRecv(const std::string &key, void *data, int64_t bytes,
                            const ShareFromFirst &shareFromFirst) {
#if WHALE_HAVE_NCCL
  if (Status st = enter(); !st)
    return st;
  Pair *pair = nullptr;
  if (Status st = pairFor(key, 1, shareFromFirst, pair); !st)
    return st;
  if (bytes == 0)
    return Status::ok();
  Status st = streamWaits(name(), pair->stream, compute);
  if (st)
    st = ncclFailed(ncclRecv(data, static_cast<size_t>(bytes), ncclUint8, 0,
                             static_cast<ncclComm_t>(pair->comm), pair->stream),
                    name() + ": ncclRecv");
  if (st)
    st = streamWaits(name(), compute, pair->stream);
  return st;
#else
  return Device::pairRecv(key, data, bytes, shareFromFirst);
#endif
}

static_assert(Device::kMaxSharedMembers <= kMemberPointers,
              "a member sum's pointers must fit the kernel's");

Status CudaDevice::sharedWork(const char *what) {
  if (Status st = enter(); !st)
    return st;
  return stepGraph->cannotHold(
      std::string(what) +
      " meets another rank on this GPU, which a graph of one rank's step "
      "cannot hold");
}

Status CudaDevice::sumMembers(const std::vector<MemberSum> &jobs) {
  if (Status st = sharedWork("a collective's sum"); !st)
    return st;
  for (const MemberSum &job : jobs) {
    if (job.from.empty() || job.from.size() > size_t(kMemberPointers) ||
        job.to.size() > size_t(kMemberPointers))
      return Status::internal(name() + ": a member sum of " +
                              std::to_string(job.from.size()) + " into " +
                              std::to_string(job.to.size()) + " buckets");
    if (job.count == 0 || job.to.empty())
      continue;
    MemberPointers p;
    p.froms = static_cast<int>(job.from.size());
    p.tos = static_cast<int>(job.to.size());
    std::copy(job.from.begin(), job.from.end(), p.from);
    std::copy(job.to.begin(), job.to.end(), p.to);
    cuda::sumMembers(compute, p, job.count);
    if (Status st = launched("sum_members"); !st)
      return st;
  }
  return Status::ok();
}

Status CudaDevice::markQueued(int slot, int64_t &marker) {
  marker = 0;
  if (slot < 0 || slot > 1)
    return Status::internal(name() + ": marker slot " + std::to_string(slot));
  if (Status st = sharedWork("a collective's marker"); !st)
    return st;
  if (!markers[slot])
    if (Status st = cudaFailed(
            cudaEventCreateWithFlags(&markers[slot], cudaEventDisableTiming),
            name() + ": cudaEventCreate");
        !st)
      return st;
  if (Status st = cudaFailed(cudaEventRecord(markers[slot], compute),
                             name() + ": cudaEventRecord");
      !st)
    return st;
  marker = static_cast<int64_t>(reinterpret_cast<intptr_t>(markers[slot]));
  return Status::ok();
}

Status CudaDevice::waitMarker(int64_t marker) {
  if (marker == 0)
    return Status::ok();
  if (Status st = sharedWork("waiting on another rank's marker"); !st)
    return st;
  auto event = reinterpret_cast<cudaEvent_t>(static_cast<intptr_t>(marker));
  return cudaFailed(cudaStreamWaitEvent(compute, event, 0),
                    name() + ": cudaStreamWaitEvent");
}

Status CudaDevice::handOver(const void *data, int64_t bytes, int64_t &block,
                            int64_t &marker) {
  block = marker = 0;
  if (Status st = sharedWork("a pipeline send"); !st)
    return st;
  if (bytes == 0)
    return Status::ok();
  const auto n = static_cast<size_t>(bytes);
  void *copy = nullptr;
  if (Status st = cudaFailed(cudaMallocAsync(&copy, n, compute),
                             name() + ": the block of a pipeline send");
      !st)
    return st;
  cudaEvent_t ready = nullptr;
  Status st = cudaFailed(
      cudaMemcpyAsync(copy, data, n, cudaMemcpyDeviceToDevice, compute),
      name() + ": copying a pipeline send");
  if (st)
    st = cudaFailed(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming),
                    name() + ": cudaEventCreate");
  if (st)
    st = cudaFailed(cudaEventRecord(ready, compute),
                    name() + ": cudaEventRecord");
  if (!st) {
    if (ready)
      cudaEventDestroy(ready);
    cudaFreeAsync(copy, compute);
    return st;
  }
  block = static_cast<int64_t>(reinterpret_cast<intptr_t>(copy));
  marker = static_cast<int64_t>(reinterpret_cast<intptr_t>(ready));
  return Status::ok();
}

Status CudaDevice::takeOver(int64_t block, int64_t marker, void *data,
                            int64_t bytes) {
  if (Status st = sharedWork("a pipeline receive"); !st)
    return st;
  if (block == 0)
    return Status::ok();
  void *copy = reinterpret_cast<void *>(static_cast<intptr_t>(block));
  auto ready = reinterpret_cast<cudaEvent_t>(static_cast<intptr_t>(marker));
  Status st = cudaFailed(cudaStreamWaitEvent(compute, ready, 0),
                         name() + ": cudaStreamWaitEvent");
  cudaEventDestroy(ready); // released once the wait is done
  if (st && bytes > 0)
    st = cudaFailed(cudaMemcpyAsync(data, copy, static_cast<size_t>(bytes),
                                    cudaMemcpyDeviceToDevice, compute),
                    name() + ": copying a pipeline receive");
  // Freed in this stream's order, after the copy (or at once, failing).
  if (Status freed = cudaFailed(cudaFreeAsync(copy, compute),
                                name() + ": freeing a pipeline send's block");
      st && !freed)
    st = freed;
  return st;
}

} // namespace whale::rt::cuda

//===----------------------------------------------------------------------===//
// The plugin's entry points (DevicePluginAbi.h)
//===----------------------------------------------------------------------===//

extern "C" WHALE_PLUGIN_EXPORT int32_t
whale_cuda_device_count(char *error, int64_t error_size) {
  int count = 0;
  if (cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess) {
    std::snprintf(error, static_cast<size_t>(error_size), "%s",
                  cudaGetErrorString(e));
    return -1;
  }
  return count;
}

extern "C" WHALE_PLUGIN_EXPORT whale::rt::Device *
whale_cuda_open_device(const char *name, int32_t ordinal, int32_t sms,
                       int64_t memory_limit, char *error, int64_t error_size) {
  std::string why;
  std::unique_ptr<whale::rt::cuda::CudaDevice> dev =
      whale::rt::cuda::CudaDevice::open(name, ordinal, sms, memory_limit, why);
  if (!dev)
    std::snprintf(error, static_cast<size_t>(error_size), "%s", why.c_str());
  return dev.release();
}
