//===- CpuDevice.cpp - the CPU device over cpu/Kernels.h ------------------===//
//
// Host memory, so copies are memcpy and the statistics a backward pass
// recomputes (layernorm's mean and rstd, cross entropy's log-sum-exp, max's
// argmax) live in host vectors that do not count against the device's limit,
// as before the device interface existed.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/CpuDevice.h"

#include "runtime/comm/Communicator.h"
#include "runtime/cpu/Kernels.h"
#include "runtime/ops/Bf16.h"
#include "runtime/ops/KvAttention.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace whale::rt {

CpuDevice::CpuDevice(std::string name, CpuDeviceOptions options)
    : Device(name,
             std::make_unique<CachingAllocator>(name, options.memoryLimit)),
      pool_(options.threads), share_(std::move(options.share)) {}

CpuDevice::~CpuDevice() = default;

Status CpuDevice::joinShare() {
  if (share_)
    for (pid_t tid : pool_.workerThreadIds())
      if (Status st = share_->join(tid); !st)
        return st;
  return Status::ok();
}

Status CpuDevice::copyToHost(void *host, const void *src, int64_t bytes) {
  std::memcpy(host, src, static_cast<size_t>(bytes));
  return Status::ok();
}
Status CpuDevice::copyFromHost(void *dst, const void *host, int64_t bytes) {
  std::memcpy(dst, host, static_cast<size_t>(bytes));
  return Status::ok();
}
Status CpuDevice::copy(void *dst, const void *src, int64_t bytes) {
  std::memmove(dst, src, static_cast<size_t>(bytes));
  return Status::ok();
}

Status CpuDevice::sumMembers(const std::vector<MemberSum> &jobs) {
  for (const MemberSum &job : jobs) {
    if (job.from.empty())
      return Status::internal(name() + ": a member sum with nothing to add");
    if (job.to.empty() || job.count == 0)
      continue;
    // The host communicator's own sum, so its order and bits (the first
    // result may be one of the terms), then copied to the other results.
    sumInGroupOrder(DType::F32, job.to[0],
                    std::vector<const void *>(job.from.begin(), job.from.end()),
                    0, job.count);
    for (size_t k = 1; k < job.to.size(); ++k)
      std::copy_n(job.to[0], job.count, job.to[k]);
  }
  return Status::ok();
}

Status CpuDevice::handOver(const void *data, int64_t bytes, int64_t &block,
                           int64_t &marker) {
  char *copy = new char[static_cast<size_t>(std::max<int64_t>(bytes, 1))];
  std::memcpy(copy, data, static_cast<size_t>(bytes));
  block = static_cast<int64_t>(reinterpret_cast<intptr_t>(copy));
  marker = 0;
  return Status::ok();
}

Status CpuDevice::takeOver(int64_t block, int64_t marker, void *data,
                           int64_t bytes) {
  char *copy = reinterpret_cast<char *>(static_cast<intptr_t>(block));
  std::memcpy(data, copy, static_cast<size_t>(bytes));
  delete[] copy;
  return Status::ok();
}

Status CpuDevice::fill(void *data, DType dtype, int64_t n, double value) {
  switch (dtype) {
  case DType::F32:
    std::fill_n(static_cast<float *>(data), n, static_cast<float>(value));
    break;
  case DType::F64:
    std::fill_n(static_cast<double *>(data), n, value);
    break;
  case DType::I32:
    std::fill_n(static_cast<int32_t *>(data), n, static_cast<int32_t>(value));
    break;
  case DType::I64:
    std::fill_n(static_cast<int64_t *>(data), n, static_cast<int64_t>(value));
    break;
  case DType::BF16:
    std::fill_n(static_cast<uint16_t *>(data), n,
                bf16Bits(static_cast<float>(value)));
    break;
  }
  return Status::ok();
}

// 64K elements a range: a conversion is a load, a few integer ops and a
// store, so less is not worth waking a thread.
Status CpuDevice::toBf16(View<const float> x, View<uint16_t> out) {
  pool().parallelFor(x.numel(), 1 << 16, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i)
      out.data[i] = bf16Bits(x.data[i]);
  });
  return Status::ok();
}

Status CpuDevice::fromBf16(View<const uint16_t> x, View<float> out) {
  pool().parallelFor(x.numel(), 1 << 16, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i)
      out.data[i] = bf16Value(x.data[i]);
  });
  return Status::ok();
}

View<const float> CpuDevice::matmulInput(View<const float> x,
                                         std::vector<float> &store) {
  if (matmulPrecision() != MatmulPrecision::BF16)
    return x;
  store.resize(static_cast<size_t>(x.numel()));
  pool().parallelFor(x.numel(), 4096, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i)
      store[i] = roundToBf16(x.data[i]);
  });
  return View<const float>{store.data(), x.shape};
}

Status CpuDevice::matmul(View<const float> a, View<const float> b,
                         View<float> out, bool transA, bool transB) {
  std::vector<float> a16, b16;
  cpu::matmul<float>(*this, matmulInput(a, a16), matmulInput(b, b16), out,
                     transA, transB);
  return Status::ok();
}

Status CpuDevice::matmulBackward(View<const float> a, View<const float> b,
                                 View<const float> dout, View<float> *da,
                                 View<float> *db, bool transA, bool transB) {
  std::vector<float> a16, b16, d16;
  cpu::matmulBackward<float>(*this, matmulInput(a, a16), matmulInput(b, b16),
                             matmulInput(dout, d16), da, db, transA, transB);
  return Status::ok();
}

Status CpuDevice::binary(BinaryOp op, View<const float> a, View<const float> b,
                         View<float> out) {
  cpu::binary<float>(*this, op, a, b, out);
  return Status::ok();
}

Status CpuDevice::binaryBackward(BinaryOp op, View<const float> a,
                                 View<const float> b, View<const float> dout,
                                 View<float> *da, View<float> *db) {
  cpu::binaryBackward<float>(*this, op, a, b, dout, da, db);
  return Status::ok();
}

Status CpuDevice::unary(UnaryOp op, View<const float> x, View<float> out) {
  cpu::unary<float>(*this, op, x, out);
  return Status::ok();
}

Status CpuDevice::fused(const FusedCode &code, void **data, int64_t rows,
                        int64_t rowElements) {
  FusedKernel kernel = code.kernel;
  if (!kernel)
    return Status::invalid(name() + ": a fused region has no kernel for the "
                                    "host");
  // Ranges of at least 8K elements: a generated loop does a short chain
  // per element at the vector width, so less is not worth waking a thread.
  int64_t grain =
      std::max<int64_t>(1, 8192 / std::max<int64_t>(1, rowElements));
  pool().parallelFor(rows, grain, [&](int64_t lo, int64_t hi) {
    kernel(data, lo, hi);
  });
  return Status::ok();
}

Status CpuDevice::unaryBackward(UnaryOp op, View<const float> x,
                                View<const float> y, View<const float> dy,
                                View<float> dx) {
  cpu::unaryBackward<float>(*this, op, x, y, dy, dx);
  return Status::ok();
}

Status CpuDevice::causalMask(View<const float> x, View<float> out) {
  cpu::causalMask<float>(*this, x, out);
  return Status::ok();
}

Status CpuDevice::causalMaskBackward(View<const float> dy, View<float> dx) {
  cpu::causalMaskBackward<float>(*this, dy, dx);
  return Status::ok();
}

Status CpuDevice::broadcastTo(View<const float> x, View<float> out) {
  cpu::broadcastTo<float>(*this, x, out);
  return Status::ok();
}

Status CpuDevice::softmax(View<const float> x, int64_t axis, View<float> y) {
  cpu::softmax<float>(*this, x, axis, y);
  return Status::ok();
}

Status CpuDevice::softmaxBackward(View<const float> y, View<const float> dy,
                                  int64_t axis, View<float> dx) {
  cpu::softmaxBackward<float>(*this, y, dy, axis, dx);
  return Status::ok();
}

Status CpuDevice::layerNorm(View<const float> x, View<const float> gamma,
                            View<const float> beta, double eps, View<float> y) {
  int64_t d = x.shape.empty() ? 0 : x.shape.back();
  int64_t rows = d ? x.numel() / d : 0;
  std::vector<float> mean(rows), rstd(rows);
  cpu::layerNorm<float>(*this, x, gamma, beta, eps, y, mean.data(),
                        rstd.data());
  return Status::ok();
}

Status CpuDevice::kvAttention(View<const float> q, View<const float> keys,
                              View<const float> values, int64_t first,
                              double scale, View<float> out) {
  KvAttentionShape d;
  if (Status st = kvAttentionShape(q.shape, keys.shape, first, d); !st)
    return st;
  pool().parallelFor(d.pairs(), 1, [&](int64_t begin, int64_t end) {
    kvAttentionPairs(d, q.data, keys.data, values.data, first, scale, out.data,
                     begin, end);
  });
  return Status::ok();
}

Status CpuDevice::rope(View<const float> x, int64_t first, double theta,
                       const RopeScaling *scaling, bool inverse,
                       View<float> y) {
  cpu::rope<float>(*this, x, first, theta, scaling, inverse, y);
  return Status::ok();
}

Status CpuDevice::rmsNorm(View<const float> x, View<const float> weight,
                          double eps, View<float> y) {
  cpu::rmsNorm<float>(*this, x, weight, eps, y);
  return Status::ok();
}

Status CpuDevice::rmsNormBackward(View<const float> x, View<const float> weight,
                                  double eps, View<const float> dy,
                                  View<float> dx, View<float> dweight) {
  cpu::rmsNormBackward<float>(*this, x, weight, eps, dy, dx, dweight);
  return Status::ok();
}

Status CpuDevice::rmsNormBackwardResidual(View<const float> x,
                                          View<const float> weight, double eps,
                                          View<const float> dy,
                                          View<const float> residual,
                                          View<float> dx, View<float> dweight) {
  cpu::rmsNormBackward<float>(*this, x, weight, eps, dy, dx, dweight,
                              residual.data);
  return Status::ok();
}

Status CpuDevice::layerNormBackward(View<const float> x,
                                    View<const float> gamma, double eps,
                                    View<const float> dy, View<float> dx,
                                    View<float> dgamma, View<float> dbeta) {
  // The forward's statistics again (not the normalized rows: two passes
  // over each row, cheap beside the rest).
  int64_t d = x.shape.empty() ? 0 : x.shape.back();
  int64_t rows = d ? x.numel() / d : 0;
  std::vector<float> mean(rows), rstd(rows);
  cpu::layerNormStatistics<float>(*this, x, eps, mean.data(), rstd.data());
  cpu::layerNormBackward<float>(*this, x, gamma, mean.data(), rstd.data(), dy,
                                dx, dgamma, dbeta);
  return Status::ok();
}

namespace {

template <class I> View<const I> indexView(const IndexView &v) {
  return View<const I>{static_cast<const I *>(v.data), v.shape};
}

} // namespace

Status CpuDevice::embedding(View<const float> table, IndexView ids,
                            View<float> out) {
  return ids.wide ? cpu::embedding<float, int64_t>(*this, table,
                                                   indexView<int64_t>(ids), out)
                  : cpu::embedding<float, int32_t>(
                        *this, table, indexView<int32_t>(ids), out);
}

Status CpuDevice::embeddingBackward(IndexView ids, View<const float> dout,
                                    View<float> dtable) {
  int64_t vocab = dtable.shape.empty() ? 0 : dtable.shape[0];
  for (int64_t i = 0, n = ids.numel(); i < n; ++i) {
    int64_t id = ids.wide ? static_cast<const int64_t *>(ids.data)[i]
                          : static_cast<const int32_t *>(ids.data)[i];
    if (id < 0 || id >= vocab)
      return Status::invalid("embedding id " + std::to_string(id) +
                             " at position " + std::to_string(i) +
                             " is outside the table's " +
                             std::to_string(vocab) + " rows");
  }
  if (ids.wide)
    cpu::embeddingBackward<float, int64_t>(*this, indexView<int64_t>(ids), dout,
                                           dtable);
  else
    cpu::embeddingBackward<float, int32_t>(*this, indexView<int32_t>(ids), dout,
                                           dtable);
  return Status::ok();
}

Status CpuDevice::crossEntropy(View<const float> logits, IndexView labels,
                               View<float> loss) {
  std::vector<float> lse(labels.numel());
  return labels.wide
             ? cpu::crossEntropy<float, int64_t>(
                   *this, logits, indexView<int64_t>(labels), loss, lse.data())
             : cpu::crossEntropy<float, int32_t>(
                   *this, logits, indexView<int32_t>(labels), loss, lse.data());
}

Status CpuDevice::crossEntropyBackward(View<const float> logits,
                                       IndexView labels,
                                       View<const float> dloss,
                                       View<float> dlogits) {
  // The forward again, for its log-sum-exp (and the label check).
  std::vector<float> loss(labels.numel()), lse(labels.numel());
  View<float> lv{loss.data(), labels.shape};
  if (labels.wide) {
    if (Status st = cpu::crossEntropy<float, int64_t>(
            *this, logits, indexView<int64_t>(labels), lv, lse.data());
        !st)
      return st;
    cpu::crossEntropyBackward<float, int64_t>(
        *this, logits, indexView<int64_t>(labels), lse.data(), dloss, dlogits);
  } else {
    if (Status st = cpu::crossEntropy<float, int32_t>(
            *this, logits, indexView<int32_t>(labels), lv, lse.data());
        !st)
      return st;
    cpu::crossEntropyBackward<float, int32_t>(
        *this, logits, indexView<int32_t>(labels), lse.data(), dloss, dlogits);
  }
  return Status::ok();
}

Status CpuDevice::reduce(ReduceOp op, View<const float> x,
                         const std::vector<int64_t> &axes, View<float> out) {
  cpu::reduce<float>(*this, op, x, axes, out, nullptr);
  return Status::ok();
}

Status CpuDevice::reduceBackward(ReduceOp op, View<const float> x,
                                 const std::vector<int64_t> &axes,
                                 View<const float> dout, View<float> dx) {
  std::vector<int64_t> argmax;
  if (op == ReduceOp::Max) {
    // Which element won, from the forward again.
    int64_t kept = dout.numel();
    std::vector<float> out(kept);
    argmax.resize(kept);
    cpu::reduce<float>(*this, ReduceOp::Max, x, axes,
                       View<float>{out.data(), {kept}}, argmax.data());
  }
  cpu::reduceBackward<float>(*this, op, x.shape, axes, dout, argmax.data(), dx);
  return Status::ok();
}

Status CpuDevice::transpose(View<const float> x,
                            const std::vector<int64_t> &perm, View<float> out) {
  cpu::transpose<float>(*this, x, perm, out);
  return Status::ok();
}

Status CpuDevice::slice(const void *x, const Shape &xShape,
                        int64_t elementBytes, int64_t axis, int64_t start,
                        int64_t end, void *out) {
  if (elementBytes != 4)
    return Status::invalid("slice: only 4-byte elements (f32, i32)");
  Shape outShape = xShape;
  outShape[axis] = end - start;
  cpu::slice<int32_t>(
      *this, View<const int32_t>{static_cast<const int32_t *>(x), xShape}, axis,
      start, View<int32_t>{static_cast<int32_t *>(out), outShape});
  return Status::ok();
}

Status CpuDevice::sliceBackward(View<const float> dout, int64_t axis,
                                int64_t start, View<float> dx) {
  cpu::sliceBackward<float>(*this, dout, axis, start, dx);
  return Status::ok();
}

Status CpuDevice::concat(const std::vector<View<const float>> &inputs,
                         int64_t axis, View<float> out) {
  cpu::concat<float>(*this, inputs, axis, out);
  return Status::ok();
}

Status CpuDevice::sgdStep(View<float> param, View<const float> grad,
                          float *velocity, const SgdParams &p) {
  cpu::sgdStep<float>(*this, param, grad, velocity, p.rate(), p.momentum,
                      p.weightDecay);
  return Status::ok();
}

Status CpuDevice::adamStep(View<float> param, View<const float> grad, float *m,
                           float *v, const AdamParams &p) {
  cpu::adamStep<float>(*this, param, grad, m, v, p.step, p.rate(), p.beta1,
                       p.beta2, p.eps, p.weightDecay, p.decoupled);
  return Status::ok();
}

Status CpuDevice::sumSquares(const std::vector<View<float>> &views,
                             double &out) {
  out = cpu::sumSquares(views);
  return Status::ok();
}

Status CpuDevice::scale(const std::vector<View<float>> &views, double factor) {
  cpu::scaleAll(*this, views, static_cast<float>(factor));
  return Status::ok();
}

Status CpuDevice::allFinite(View<const float> x, bool &finite) {
  finite = true;
  for (int64_t i = 0, n = x.numel(); i < n && finite; ++i)
    finite = std::isfinite(x.data[i]);
  return Status::ok();
}

} // namespace whale::rt
