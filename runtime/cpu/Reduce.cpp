//===- Reduce.cpp - sum, mean and max over axes ---------------------------===//

#include "runtime/cpu/Kernels.h"

#include <algorithm>
#include <cstring>

namespace whale::rt::cpu {

namespace {

/// For each input element, the index of the output element it reduces into:
/// the input's strides with the reduced axes' strides set to 0.
std::vector<int64_t> outputStrides(const Shape &x,
                                   const std::vector<int64_t> &axes) {
  std::vector<int64_t> strides(x.size(), 0);
  int64_t stride = 1;
  for (int64_t d = static_cast<int64_t>(x.size()) - 1; d >= 0; --d) {
    if (std::find(axes.begin(), axes.end(), d) != axes.end())
      continue;
    strides[d] = stride;
    stride *= x[d];
  }
  return strides;
}

int64_t outputIndex(int64_t linear, const Shape &x,
                    const std::vector<int64_t> &strides) {
  int64_t out = 0;
  for (int64_t d = static_cast<int64_t>(x.size()) - 1; d >= 0; --d) {
    out += (linear % x[d]) * strides[d];
    linear /= x[d];
  }
  return out;
}

} // namespace

template <class T>
void reduce(CpuDevice &dev, ReduceOp op, View<const T> x,
            const std::vector<int64_t> &axes, View<T> out, int64_t *argmax) {
  int64_t n = x.numel(), m = out.numel();
  int64_t count = m ? n / m : 0;
  std::vector<int64_t> strides = outputStrides(x.shape, axes);
  std::vector<bool> seen(op == ReduceOp::Max ? m : 0, false);
  if (op != ReduceOp::Max)
    std::memset(out.data, 0, sizeof(T) * m);
  // One ordered pass: the result is the same whatever the thread count, so
  // parallel plans reproduce a single device's numbers exactly.
  for (int64_t i = 0; i < n; ++i) {
    int64_t o = outputIndex(i, x.shape, strides);
    T v = x.data[i];
    if (op == ReduceOp::Max) {
      if (!seen[o] || v > out.data[o]) {
        seen[o] = true;
        out.data[o] = v;
        if (argmax)
          argmax[o] = i;
      }
    } else {
      out.data[o] += v;
    }
  }
  if (op == ReduceOp::Mean && count > 0)
    for (int64_t o = 0; o < m; ++o)
      out.data[o] /= T(count);
  (void)dev;
}

template <class T>
void reduceBackward(CpuDevice &dev, ReduceOp op, const Shape &xShape,
                    const std::vector<int64_t> &axes, View<const T> dout,
                    const int64_t *argmax, View<T> dx) {
  int64_t n = numElements(xShape), m = dout.numel();
  if (op == ReduceOp::Max) {
    // Only the element that won receives the gradient.
    std::memset(dx.data, 0, sizeof(T) * n);
    for (int64_t o = 0; o < m; ++o)
      dx.data[argmax[o]] = dout.data[o];
    return;
  }
  T scale = op == ReduceOp::Mean && m ? T(m) / T(n) : T(1);
  std::vector<int64_t> strides = outputStrides(xShape, axes);
  dev.pool().parallelFor(n, 4096, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i)
      dx.data[i] = dout.data[outputIndex(i, xShape, strides)] * scale;
  });
}

#define WHALE_INSTANTIATE(T)                                                   \
  template void reduce<T>(CpuDevice &, ReduceOp, View<const T>,                \
                          const std::vector<int64_t> &, View<T>, int64_t *);   \
  template void reduceBackward<T>(CpuDevice &, ReduceOp, const Shape &,        \
                                  const std::vector<int64_t> &, View<const T>, \
                                  const int64_t *, View<T>);
WHALE_INSTANTIATE(float)
WHALE_INSTANTIATE(double)
#undef WHALE_INSTANTIATE

} // namespace whale::rt::cpu
