//===- CudaDevice.cu - a CUDA GPU as a whale device -----------------------===//
//
// Host code: memory, copies, cuBLAS for every matmul, and the index maps the
// kernels of CudaKernels.cu walk. Every method makes its GPU the thread's,
// queues work on the compute stream and returns; only copies to the host
// (and ops that must report bad ids or labels) wait for the stream.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/CudaDevice.h"

#include "runtime/cuda/DevicePluginAbi.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

namespace whale::rt::cuda {

namespace {

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

std::vector<int64_t> contiguousStrides(const Shape &s) {
  std::vector<int64_t> strides(s.size(), 1);
  for (int d = static_cast<int>(s.size()) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * s[d + 1];
  return strides;
}

/// The strides of `operand` (aligned to the right of `out`) per output
/// dimension: 0 where it is missing or broadcast.
void broadcastStrides(const Shape &operand, const Shape &out,
                      int64_t *strides) {
  std::vector<int64_t> own = contiguousStrides(operand);
  int shift = static_cast<int>(out.size() - operand.size());
  for (int d = 0; d < static_cast<int>(out.size()); ++d) {
    int od = d - shift;
    strides[d] = od < 0 || (operand[od] == 1 && out[d] != 1) ? 0 : own[od];
  }
}

Status rankFits(const Shape &s, const char *op) {
  if (s.size() > static_cast<size_t>(kMaxRank))
    return Status::invalid(
        std::string(op) + ": rank " + std::to_string(s.size()) +
        " is more than the GPU kernels' " + std::to_string(kMaxRank));
  return Status::ok();
}

Strided stridedOver(const Shape &out) {
  Strided m;
  m.rank = static_cast<int>(out.size());
  for (size_t d = 0; d < out.size(); ++d)
    m.size[d] = out[d];
  return m;
}

/// [outer, extent, inner] around `axis` of `shape`.
void aroundAxis(const Shape &shape, int64_t axis, int64_t &outer,
                int64_t &extent, int64_t &inner) {
  outer = inner = 1;
  for (int64_t d = 0; d < axis; ++d)
    outer *= shape[d];
  extent = shape[axis];
  for (size_t d = axis + 1; d < shape.size(); ++d)
    inner *= shape[d];
}

bool tf32Allowed() {
  const char *v = std::getenv("WHALE_CUDA_TF32");
  return v && std::strcmp(v, "1") == 0;
}

} // namespace

//===----------------------------------------------------------------------===//
// Memory
//===----------------------------------------------------------------------===//

size_t CachingAllocator::bucket(size_t bytes) {
  // 512-byte granules below 1 MiB, 2 MiB granules above: few distinct sizes
  // to cache, at most a few percent lost to rounding.
  size_t granule = bytes < (1u << 20) ? 512 : (2u << 20);
  return (bytes + granule - 1) / granule * granule;
}

void *CachingAllocator::rawAllocate(size_t bytes) {
  size_t size = bucket(bytes);
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = free.find(size); it != free.end()) {
    void *p = it->second;
    free.erase(it);
    return p;
  }
  cudaSetDevice(ordinal);
  void *p = nullptr;
  if (cudaMalloc(&p, size) != cudaSuccess) {
    cudaGetLastError(); // clear the sticky-free error before trying again
    emptyCache();
    if (cudaMalloc(&p, size) != cudaSuccess) {
      cudaGetLastError();
      return nullptr;
    }
  }
  sizes[p] = size;
  return p;
}

void CachingAllocator::rawRelease(void *ptr, size_t) {
  std::lock_guard<std::mutex> lock(mutex);
  auto it = sizes.find(ptr);
  if (it != sizes.end())
    free.emplace(it->second, ptr);
}

void CachingAllocator::emptyCache() {
  for (auto &[size, p] : free) {
    cudaFree(p);
    sizes.erase(p);
  }
  free.clear();
}

CachingAllocator::~CachingAllocator() {
  cudaSetDevice(ordinal);
  for (auto &[p, size] : sizes)
    cudaFree(p);
}

//===----------------------------------------------------------------------===//
// The device
//===----------------------------------------------------------------------===//

CudaDevice::CudaDevice(const std::string &name, int ordinal,
                       int64_t memoryLimit)
    : Device(name,
             std::make_unique<CachingAllocator>(name, memoryLimit, ordinal)),
      ordinal(ordinal) {}

std::unique_ptr<CudaDevice> CudaDevice::open(const std::string &name,
                                             int ordinal, int64_t memoryLimit,
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
  if (st)
    st = cudaFailed(
        cudaStreamCreateWithFlags(&dev->compute, cudaStreamNonBlocking),
        name + ": creating the compute stream");
  if (st)
    st = cudaFailed(
        cudaStreamCreateWithFlags(&dev->transfer, cudaStreamNonBlocking),
        name + ": creating the transfer stream");
  if (st)
    st = cudaFailed(cudaMalloc(&dev->dataError, sizeof(DataError)),
                    name + ": allocating the error record");
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
  if (compute)
    cudaStreamSynchronize(compute);
  for (auto &[p, size] : scratchSlots)
    cudaFree(p);
  if (dataError)
    cudaFree(dataError);
  if (blas)
    cublasDestroy(blas);
  if (compute)
    cudaStreamDestroy(compute);
  if (transfer)
    cudaStreamDestroy(transfer);
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
    if (p) {
      cudaStreamSynchronize(compute);
      cudaFree(p);
      p = nullptr;
      size = 0;
    }
    if (Status st = cudaFailed(cudaMalloc(&p, std::max<size_t>(bytes, 256)),
                               name() + ": scratch memory");
        !st)
      return st;
    size = std::max<size_t>(bytes, 256);
  }
  *out = p;
  return Status::ok();
}

Status CudaDevice::clearDataError() {
  return cudaFailed(
      cudaMemsetAsync(dataError, 0xff, sizeof(DataError), compute),
      name() + ": clearing the error record");
}

Status CudaDevice::takeDataError(const char *what, int64_t limit) {
  DataError found;
  if (Status st = launched(what); !st)
    return st;
  if (Status st = copyToHost(&found, dataError, sizeof found); !st)
    return st;
  if (found.position < 0)
    return Status::ok();
  return Status::invalid(std::string(what) + " " + std::to_string(found.value) +
                         " at position " + std::to_string(found.position) +
                         " is outside [0, " + std::to_string(limit) + ")");
}

Status CudaDevice::copyToHost(void *host, const void *src, int64_t bytes) {
  if (Status st = enter(); !st)
    return st;
  if (bytes == 0)
    return Status::ok();
  Status st = cudaFailed(
      cudaMemcpyAsync(host, src, bytes, cudaMemcpyDeviceToHost, compute),
      name() + ": copy to the host");
  if (st)
    st = cudaFailed(cudaStreamSynchronize(compute), name() + ": synchronize");
  return st;
}

Status CudaDevice::copyFromHost(void *dst, const void *host, int64_t bytes) {
  if (Status st = enter(); !st)
    return st;
  if (bytes == 0)
    return Status::ok();
  // The host buffer may go as soon as this returns: wait for the copy.
  Status st = cudaFailed(
      cudaMemcpyAsync(dst, host, bytes, cudaMemcpyHostToDevice, compute),
      name() + ": copy from the host");
  if (st)
    st = cudaFailed(cudaStreamSynchronize(compute), name() + ": synchronize");
  return st;
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

Status CudaDevice::synchronize() {
  if (Status st = enter(); !st)
    return st;
  return cudaFailed(cudaStreamSynchronize(compute), name() + ": synchronize");
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
  }
  return launched("fill");
}

//===----------------------------------------------------------------------===//
// Matmul on cuBLAS
//===----------------------------------------------------------------------===//

namespace {

/// Row-major C[M, N] (batched) = alpha op(A) op(B) + beta C, as column-major
/// cuBLAS computes C^T = op(B)^T op(A)^T. lda/ldb are the row-major widths.
Status gemm(cublasHandle_t h, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
            const float *a, int64_t strideA, const float *b, int64_t strideB,
            float beta, float *c, int64_t strideC, int64_t batch) {
  if (m == 0 || n == 0 || batch == 0)
    return Status::ok();
  const float alpha = 1.0f;
  int64_t lda = ta ? m : k, ldb = tb ? k : n;
  return blasFailed(
      cublasSgemmStridedBatched(
          h, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N,
          static_cast<int>(n), static_cast<int>(m), static_cast<int>(k), &alpha,
          b, static_cast<int>(ldb), strideB, a, static_cast<int>(lda), strideA,
          &beta, c, static_cast<int>(n), strideC, static_cast<int>(batch)),
      "cublasSgemmStridedBatched");
}

struct MatmulDims {
  int64_t m, n, k, batch;
  bool shared; ///< b is one matrix for every batch element
};

MatmulDims dimsOf(const Shape &sa, const Shape &sb, bool ta, bool tb) {
  size_t ra = sa.size(), rb = sb.size();
  MatmulDims d;
  d.m = ta ? sa[ra - 1] : sa[ra - 2];
  d.k = ta ? sa[ra - 2] : sa[ra - 1];
  d.n = tb ? sb[rb - 2] : sb[rb - 1];
  d.batch = 1;
  for (size_t i = 0; i + 2 < ra; ++i)
    d.batch *= sa[i];
  d.shared = rb == 2;
  return d;
}

} // namespace

Status CudaDevice::matmul(View<const float> a, View<const float> b,
                          View<float> out, bool transA, bool transB) {
  if (Status st = enter(); !st)
    return st;
  MatmulDims d = dimsOf(a.shape, b.shape, transA, transB);
  if (d.shared && !transA) // one GEMM over every row of the batch
    return gemm(blas, false, transB, d.batch * d.m, d.n, d.k, a.data, 0, b.data,
                0, 0.0f, out.data, 0, 1);
  return gemm(blas, transA, transB, d.m, d.n, d.k, a.data, d.m * d.k, b.data,
              d.shared ? 0 : d.k * d.n, 0.0f, out.data, d.m * d.n, d.batch);
}

Status CudaDevice::matmulBackward(View<const float> a, View<const float> b,
                                  View<const float> dout, View<float> *da,
                                  View<float> *db, bool transA, bool transB) {
  if (Status st = enter(); !st)
    return st;
  MatmulDims d = dimsOf(a.shape, b.shape, transA, transB);
  const int64_t sA = d.m * d.k, sB = d.shared ? 0 : d.k * d.n, sC = d.m * d.n;
  if (da) {
    // C = op(A) op(B): dA = dC op(B)^T, or op(B) dC^T when A is transposed.
    Status st = transA ? gemm(blas, transB, true, d.k, d.m, d.n, b.data, sB,
                              dout.data, sC, 0.0f, da->data, sA, d.batch)
                       : gemm(blas, false, !transB, d.m, d.k, d.n, dout.data,
                              sC, b.data, sB, 0.0f, da->data, sA, d.batch);
    if (!st)
      return st;
  }
  if (db) {
    if (!d.shared)
      return transB ? gemm(blas, true, transA, d.n, d.k, d.m, dout.data, sC,
                           a.data, sA, 0.0f, db->data, sB, d.batch)
                    : gemm(blas, !transA, false, d.k, d.n, d.m, a.data, sA,
                           dout.data, sC, 0.0f, db->data, sB, d.batch);
    if (!transA) // the batch's rows folded into one GEMM's inner dimension
      return transB ? gemm(blas, true, false, d.n, d.k, d.batch * d.m,
                           dout.data, 0, a.data, 0, 0.0f, db->data, 0, 1)
                    : gemm(blas, true, false, d.k, d.n, d.batch * d.m, a.data,
                           0, dout.data, 0, 0.0f, db->data, 0, 1);
    // A transposed per batch element: accumulate one GEMM per element.
    for (int64_t i = 0; i < d.batch; ++i) {
      float beta = i == 0 ? 0.0f : 1.0f;
      Status st =
          transB ? gemm(blas, true, true, d.n, d.k, d.m, dout.data + i * sC, 0,
                        a.data + i * sA, 0, beta, db->data, 0, 1)
                 : gemm(blas, false, false, d.k, d.n, d.m, a.data + i * sA, 0,
                        dout.data + i * sC, 0, beta, db->data, 0, 1);
      if (!st)
        return st;
    }
  }
  return Status::ok();
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
  Strided map = stridedOver(out.shape);
  broadcastStrides(a.shape, out.shape, map.strideA);
  broadcastStrides(b.shape, out.shape, map.strideB);
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
  Walk walk;
  walk.rank = static_cast<int>(dout.shape.size());
  for (int d = 0; d < walk.rank; ++d)
    walk.full[d] = dout.shape[d];
  broadcastStrides(a.shape, dout.shape, walk.strideA);
  broadcastStrides(b.shape, dout.shape, walk.strideB);
  int which = 0;
  for (View<float> *grad : {da, db}) {
    if (grad && grad->numel() > 0) {
      int shift = walk.rank - static_cast<int>(grad->shape.size());
      for (int d = 0; d < walk.rank; ++d)
        walk.part[d] = d < shift ? 1 : grad->shape[d - shift];
      cuda::binaryGrad(compute, static_cast<int>(op), which, a.data, b.data,
                       dout.data, grad->data, walk, grad->numel(),
                       dout.numel() / grad->numel());
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

Status CudaDevice::broadcastTo(View<const float> x, View<float> out) {
  if (Status st = enter(); !st)
    return st;
  if (Status st = rankFits(out.shape, "broadcast"); !st)
    return st;
  Strided map = stridedOver(out.shape);
  broadcastStrides(x.shape, out.shape, map.strideA);
  if (out.numel() > 0)
    gather(compute, x.data, out.data, map, out.numel());
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

Status CudaDevice::layerNormBackward(View<const float> x,
                                     View<const float> gamma, double eps,
                                     View<const float> dy, View<float> dx,
                                     View<float> dgamma, View<float> dbeta) {
  if (Status st = enter(); !st)
    return st;
  int64_t width = x.shape.back(), rows = width ? x.numel() / width : 0;
  void *stats, *y;
  if (Status st = scratch(0, 2 * rows * sizeof(float), &stats); !st)
    return st;
  if (Status st = scratch(1, x.numel() * sizeof(float), &y); !st)
    return st;
  float *mean = static_cast<float *>(stats), *rstd = mean + rows;
  // The forward statistics again; its output goes to scratch.
  cuda::layerNorm(compute, x.data, gamma.data, nullptr, static_cast<float>(eps),
                  static_cast<float *>(y), mean, rstd, rows, width);
  layerNormGrad(compute, x.data, gamma.data, mean, rstd, dy.data, dx.data,
                dgamma.data, dbeta.data, rows, width);
  return launched("layernorm_grad");
}

Status CudaDevice::embedding(View<const float> table, IndexView ids,
                             View<float> out) {
  if (Status st = enter(); !st)
    return st;
  if (Status st = clearDataError(); !st)
    return st;
  int64_t vocab = table.shape[0], width = table.shape[1];
  if (ids.numel() * width > 0)
    cuda::embedding(compute, table.data, ids.data, ids.wide, out.data,
                    ids.numel(), vocab, width, dataError);
  return takeDataError("embedding id", vocab);
}

Status CudaDevice::embeddingBackward(IndexView ids, View<const float> dout,
                                     View<float> dtable) {
  if (Status st = enter(); !st)
    return st;
  if (Status st = fill(dtable.data, DType::F32, dtable.numel(), 0); !st)
    return st;
  if (Status st = clearDataError(); !st)
    return st;
  int64_t vocab = dtable.shape[0], width = dtable.shape[1];
  if (ids.numel() * width > 0)
    embeddingGrad(compute, ids.data, ids.wide, dout.data, dtable.data,
                  ids.numel(), vocab, width, dataError);
  return takeDataError("embedding id", vocab);
}

Status CudaDevice::crossEntropy(View<const float> logits, IndexView labels,
                                View<float> loss) {
  if (Status st = enter(); !st)
    return st;
  if (Status st = clearDataError(); !st)
    return st;
  int64_t classes = logits.shape.back();
  cuda::crossEntropy(compute, logits.data, labels.data, labels.wide, loss.data,
                     labels.numel(), classes, dataError);
  return takeDataError("label", classes);
}

Status CudaDevice::crossEntropyBackward(View<const float> logits,
                                        IndexView labels,
                                        View<const float> dloss,
                                        View<float> dlogits) {
  if (Status st = enter(); !st)
    return st;
  if (Status st = clearDataError(); !st)
    return st;
  int64_t classes = logits.shape.back();
  crossEntropyGrad(compute, logits.data, labels.data, labels.wide, dloss.data,
                   dlogits.data, labels.numel(), classes, dataError);
  return takeDataError("label", classes);
}

//===----------------------------------------------------------------------===//
// Reductions and layout
//===----------------------------------------------------------------------===//

namespace {

/// x's index space with the reduced axes collapsed in `part`.
Walk reduceWalk(const Shape &x, const std::vector<int64_t> &axes, int64_t &kept,
                int64_t &count) {
  Walk w;
  w.rank = static_cast<int>(x.size());
  kept = 1;
  count = 1;
  for (int d = 0; d < w.rank; ++d) {
    bool reduced = std::find(axes.begin(), axes.end(), d) != axes.end();
    w.full[d] = x[d];
    w.part[d] = reduced ? 1 : x[d];
    (reduced ? count : kept) *= x[d];
  }
  return w;
}

} // namespace

Status CudaDevice::reduce(ReduceOp op, View<const float> x,
                          const std::vector<int64_t> &axes, View<float> out) {
  if (Status st = enter(); !st)
    return st;
  if (Status st = rankFits(x.shape, "reduce"); !st)
    return st;
  int64_t kept, count;
  Walk w = reduceWalk(x.shape, axes, kept, count);
  if (kept > 0)
    cuda::reduce(compute, static_cast<int>(op), x.data, out.data, w, kept,
                 count);
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
  Strided map = stridedOver(out.shape);
  std::vector<int64_t> strides = contiguousStrides(x.shape);
  for (size_t i = 0; i < perm.size(); ++i)
    map.strideA[i] = strides[perm[i]];
  if (out.numel() > 0)
    gather(compute, x.data, out.data, map, out.numel());
  return launched("transpose");
}

namespace {

/// Copies a range of `axis` between a tensor and a thinner one, as one 2D
/// copy: `outer` rows of `inner`-byte runs.
cudaError_t copyRange(cudaStream_t s, char *dst, int64_t dstPitch,
                      const char *src, int64_t srcPitch, int64_t width,
                      int64_t rows) {
  if (width == 0 || rows == 0)
    return cudaSuccess;
  return cudaMemcpy2DAsync(dst, dstPitch, src, srcPitch, width, rows,
                           cudaMemcpyDeviceToDevice, s);
}

} // namespace

Status CudaDevice::slice(const void *x, const Shape &xShape,
                         int64_t elementBytes, int64_t axis, int64_t start,
                         int64_t end, void *out) {
  if (Status st = enter(); !st)
    return st;
  int64_t outer, extent, inner;
  aroundAxis(xShape, axis, outer, extent, inner);
  int64_t run = inner * elementBytes;
  return cudaFailed(copyRange(compute, static_cast<char *>(out),
                              (end - start) * run,
                              static_cast<const char *>(x) + start * run,
                              extent * run, (end - start) * run, outer),
                    name() + ": slice");
}

Status CudaDevice::sliceBackward(View<const float> dout, int64_t axis,
                                 int64_t start, View<float> dx) {
  if (Status st = fill(dx.data, DType::F32, dx.numel(), 0); !st)
    return st;
  int64_t outer, extent, inner;
  aroundAxis(dx.shape, axis, outer, extent, inner);
  int64_t run = inner * sizeof(float), len = dout.shape[axis];
  return cudaFailed(
      copyRange(compute, reinterpret_cast<char *>(dx.data) + start * run,
                extent * run, reinterpret_cast<const char *>(dout.data),
                len * run, len * run, outer),
      name() + ": slice_grad");
}

Status CudaDevice::concat(const std::vector<View<const float>> &inputs,
                          int64_t axis, View<float> out) {
  if (Status st = enter(); !st)
    return st;
  int64_t outer, extent, inner;
  aroundAxis(out.shape, axis, outer, extent, inner);
  int64_t run = inner * sizeof(float), at = 0;
  for (const View<const float> &in : inputs) {
    int64_t len = in.shape[axis];
    if (Status st = cudaFailed(
            copyRange(compute, reinterpret_cast<char *>(out.data) + at * run,
                      extent * run, reinterpret_cast<const char *>(in.data),
                      len * run, len * run, outer),
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

Status CudaDevice::sgdStep(View<float> param, View<const float> grad,
                           float *velocity, const SgdParams &p) {
  if (Status st = enter(); !st)
    return st;
  if (param.numel() > 0)
    cuda::sgdStep(compute, param.data, grad.data, velocity, param.numel(),
                  static_cast<float>(p.lr), static_cast<float>(p.momentum),
                  static_cast<float>(p.weightDecay));
  return launched("sgd_update");
}

Status CudaDevice::adamStep(View<float> param, View<const float> grad, float *m,
                            float *v, const AdamParams &p) {
  if (Status st = enter(); !st)
    return st;
  double c1 = 1 - std::pow(p.beta1, static_cast<double>(p.step));
  double c2 = 1 - std::pow(p.beta2, static_cast<double>(p.step));
  if (param.numel() > 0)
    cuda::adamStep(compute, param.data, grad.data, m, v, param.numel(),
                   static_cast<float>(p.lr), static_cast<float>(p.beta1),
                   static_cast<float>(p.beta2), static_cast<float>(p.eps),
                   static_cast<float>(p.weightDecay), p.decoupled,
                   static_cast<float>(c1), static_cast<float>(c2));
  return launched("adam_update");
}

Status CudaDevice::sumSquares(const std::vector<View<float>> &views,
                              double &out) {
  if (Status st = enter(); !st)
    return st;
  void *buffer;
  if (Status st = scratch(2, (kSquareBlocks + 1) * sizeof(double), &buffer);
      !st)
    return st;
  double *partials = static_cast<double *>(buffer);
  if (Status st = cudaFailed(
          cudaMemsetAsync(partials, 0, kSquareBlocks * sizeof(double), compute),
          name() + ": sum of squares");
      !st)
    return st;
  for (const View<float> &v : views)
    if (v.numel() > 0)
      sumSquaresPartial(compute, v.data, v.numel(), partials);
  sumPartials(compute, partials, partials + kSquareBlocks);
  if (Status st = launched("sum of squares"); !st)
    return st;
  return copyToHost(&out, partials + kSquareBlocks, sizeof(double));
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
whale_cuda_open_device(const char *name, int32_t ordinal, int64_t memory_limit,
                       char *error, int64_t error_size) {
  std::string why;
  std::unique_ptr<whale::rt::cuda::CudaDevice> dev =
      whale::rt::cuda::CudaDevice::open(name, ordinal, memory_limit, why);
  if (!dev)
    std::snprintf(error, static_cast<size_t>(error_size), "%s", why.c_str());
  return dev.release();
}
