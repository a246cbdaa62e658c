//===- Layout.cpp - transpose, slice, concat ------------------------------===//

#include "runtime/cpu/Kernels.h"

#include <algorithm>
#include <cstring>

namespace whale::rt::cpu {

std::vector<int64_t> inversePermutation(const std::vector<int64_t> &perm) {
  std::vector<int64_t> inv(perm.size());
  for (size_t i = 0; i < perm.size(); ++i)
    inv[perm[i]] = static_cast<int64_t>(i);
  return inv;
}

template <class T>
void transpose(CpuDevice &dev, View<const T> x,
               const std::vector<int64_t> &perm, View<T> out) {
  size_t rank = perm.size();
  std::vector<int64_t> xStrides(rank, 1);
  for (int64_t d = static_cast<int64_t>(rank) - 2; d >= 0; --d)
    xStrides[d] = xStrides[d + 1] * x.shape[d + 1];
  // Output dimension i walks input dimension perm[i].
  std::vector<int64_t> step(rank);
  for (size_t i = 0; i < rank; ++i)
    step[i] = xStrides[perm[i]];
  int64_t inner = rank ? out.shape.back() : 1;
  int64_t rows = inner ? out.numel() / inner : 0;
  int64_t innerStep = rank ? step.back() : 0;
  dev.pool().parallelFor(
      rows, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, inner)),
      [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
          int64_t src = 0, rest = r;
          for (int64_t d = static_cast<int64_t>(rank) - 2; d >= 0; --d) {
            src += (rest % out.shape[d]) * step[d];
            rest /= out.shape[d];
          }
          T *dst = out.data + r * inner;
          for (int64_t j = 0; j < inner; ++j)
            dst[j] = x.data[src + j * innerStep];
        }
      });
}

namespace {
/// Outer count, and the bytes of one slab (the axis and everything after).
int64_t outerOf(const Shape &s, int64_t axis) {
  int64_t outer = 1;
  for (int64_t i = 0; i < axis; ++i)
    outer *= s[i];
  return outer;
}
int64_t innerOf(const Shape &s, int64_t axis) {
  int64_t inner = 1;
  for (size_t i = axis + 1; i < s.size(); ++i)
    inner *= s[i];
  return inner;
}
} // namespace

template <class T>
void slice(CpuDevice &dev, View<const T> x, int64_t axis, int64_t start,
           View<T> out) {
  int64_t outer = outerOf(x.shape, axis), inner = innerOf(x.shape, axis);
  int64_t inLen = x.shape[axis], outLen = out.shape[axis];
  dev.pool().parallelFor(outer, 16, [&](int64_t o0, int64_t o1) {
    for (int64_t o = o0; o < o1; ++o)
      std::memcpy(out.data + o * outLen * inner,
                  x.data + (o * inLen + start) * inner,
                  sizeof(T) * outLen * inner);
  });
}

template <class T>
void sliceBackward(CpuDevice &dev, View<const T> dout, int64_t axis,
                   int64_t start, View<T> dx) {
  std::memset(dx.data, 0, sizeof(T) * dx.numel());
  int64_t outer = outerOf(dx.shape, axis), inner = innerOf(dx.shape, axis);
  int64_t inLen = dx.shape[axis], outLen = dout.shape[axis];
  dev.pool().parallelFor(outer, 16, [&](int64_t o0, int64_t o1) {
    for (int64_t o = o0; o < o1; ++o)
      std::memcpy(dx.data + (o * inLen + start) * inner,
                  dout.data + o * outLen * inner, sizeof(T) * outLen * inner);
  });
}

template <class T>
void concat(CpuDevice &dev, const std::vector<View<const T>> &inputs,
            int64_t axis, View<T> out) {
  int64_t outer = outerOf(out.shape, axis), inner = innerOf(out.shape, axis);
  int64_t outLen = out.shape[axis];
  dev.pool().parallelFor(outer, 16, [&](int64_t o0, int64_t o1) {
    for (int64_t o = o0; o < o1; ++o) {
      int64_t at = 0;
      for (const View<const T> &in : inputs) {
        int64_t len = in.shape[axis];
        std::memcpy(out.data + (o * outLen + at) * inner,
                    in.data + o * len * inner, sizeof(T) * len * inner);
        at += len;
      }
    }
  });
}

template <class T>
void concatBackward(CpuDevice &dev, View<const T> dout, int64_t axis,
                    std::vector<View<T>> &dinputs) {
  int64_t outer = outerOf(dout.shape, axis), inner = innerOf(dout.shape, axis);
  int64_t outLen = dout.shape[axis];
  dev.pool().parallelFor(outer, 16, [&](int64_t o0, int64_t o1) {
    for (int64_t o = o0; o < o1; ++o) {
      int64_t at = 0;
      for (View<T> &d : dinputs) {
        int64_t len = d.shape[axis];
        std::memcpy(d.data + o * len * inner,
                    dout.data + (o * outLen + at) * inner,
                    sizeof(T) * len * inner);
        at += len;
      }
    }
  });
}

#define WHALE_INSTANTIATE(T)                                                   \
  template void transpose<T>(CpuDevice &, View<const T>,                       \
                             const std::vector<int64_t> &, View<T>);           \
  template void slice<T>(CpuDevice &, View<const T>, int64_t, int64_t,         \
                         View<T>);                                             \
  template void sliceBackward<T>(CpuDevice &, View<const T>, int64_t, int64_t, \
                                 View<T>);                                     \
  template void concat<T>(CpuDevice &, const std::vector<View<const T>> &,     \
                          int64_t, View<T>);                                   \
  template void concatBackward<T>(CpuDevice &, View<const T>, int64_t,         \
                                  std::vector<View<T>> &);
WHALE_INSTANTIATE(float)
WHALE_INSTANTIATE(double)
WHALE_INSTANTIATE(int32_t)
WHALE_INSTANTIATE(int64_t)
#undef WHALE_INSTANTIATE

} // namespace whale::rt::cpu
