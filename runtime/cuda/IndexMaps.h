//===- IndexMaps.h - the index maps GPU kernels walk -------------*- C++
//-*-===//
//
// Host code that turns shapes into the Strided and Walk maps of
// ElementMath.h, and concat/slice into 2D copies. Header-only and free of
// CUDA, so the CPU unit tests build the very maps the GPU receives.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_CUDA_INDEXMAPS_H
#define WHALE_RUNTIME_CUDA_INDEXMAPS_H

#include "runtime/core/Status.h"
#include "runtime/core/Tensor.h"
#include "runtime/cuda/ElementMath.h"

#include <algorithm>
#include <string>
#include <vector>

namespace whale::rt::cuda {

inline std::vector<int64_t> contiguousStrides(const Shape &s) {
  std::vector<int64_t> strides(s.size(), 1);
  for (int d = static_cast<int>(s.size()) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * s[d + 1];
  return strides;
}

inline Status rankFits(const Shape &s, const char *op) {
  if (s.size() > static_cast<size_t>(kMaxRank))
    return Status::invalid(
        std::string(op) + ": rank " + std::to_string(s.size()) +
        " is more than the GPU kernels' " + std::to_string(kMaxRank));
  return Status::ok();
}

/// The strides of `operand` (aligned to the right of `out`) per output
/// dimension: 0 where it is missing or broadcast.
inline void broadcastStrides(const Shape &operand, const Shape &out,
                             int64_t *strides) {
  std::vector<int64_t> own = contiguousStrides(operand);
  int shift = static_cast<int>(out.size() - operand.size());
  for (int d = 0; d < static_cast<int>(out.size()); ++d) {
    int od = d - shift;
    strides[d] = od < 0 || (operand[od] == 1 && out[d] != 1) ? 0 : own[od];
  }
}

/// out = a op b: the output's space with both operands' broadcast strides
/// (b may be empty for one-operand gathers).
inline Strided broadcastMap(const Shape &out, const Shape &a,
                            const Shape *b = nullptr) {
  Strided m;
  m.rank = static_cast<int>(out.size());
  for (size_t d = 0; d < out.size(); ++d)
    m.size[d] = out[d];
  broadcastStrides(a, out, m.strideA);
  if (b)
    broadcastStrides(*b, out, m.strideB);
  return m;
}

/// out dimension i is x dimension perm[i].
inline Strided transposeMap(const Shape &x, const std::vector<int64_t> &perm) {
  Strided m;
  m.rank = static_cast<int>(x.size());
  std::vector<int64_t> strides = contiguousStrides(x);
  for (size_t i = 0; i < perm.size(); ++i) {
    m.size[i] = x[perm[i]];
    m.strideA[i] = strides[perm[i]];
  }
  return m;
}

/// The walk of a op b's output onto the gradient of an operand of `grad`
/// shape; perPart output elements feed each gradient element.
inline Walk binaryGradientWalk(const Shape &out, const Shape &a, const Shape &b,
                               const Shape &grad, int64_t &perPart) {
  Walk w;
  w.rank = static_cast<int>(out.size());
  broadcastStrides(a, out, w.strideA);
  broadcastStrides(b, out, w.strideB);
  int shift = w.rank - static_cast<int>(grad.size());
  for (int d = 0; d < w.rank; ++d) {
    w.full[d] = out[d];
    w.part[d] = d < shift ? 1 : grad[d - shift];
  }
  int64_t g = numElements(grad);
  perPart = g ? numElements(out) / g : 0;
  return w;
}

/// x's index space with the reduced (sorted) axes collapsed in `part`.
inline Walk reduceWalk(const Shape &x, const std::vector<int64_t> &axes,
                       int64_t &kept, int64_t &count) {
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

/// [outer, extent, inner] around `axis` of `shape`.
inline void aroundAxis(const Shape &shape, int64_t axis, int64_t &outer,
                       int64_t &extent, int64_t &inner) {
  outer = inner = 1;
  for (int64_t d = 0; d < axis; ++d)
    outer *= shape[d];
  extent = shape[axis];
  for (size_t d = axis + 1; d < shape.size(); ++d)
    inner *= shape[d];
}

/// A copy of `rows` runs of `width` bytes, each run starting `srcPitch`
/// (`dstPitch`) bytes after the last: cudaMemcpy2D's arguments, with the
/// offsets from the tensors' starts.
struct Copy2D {
  int64_t dstOffset = 0, dstPitch = 0, srcOffset = 0, srcPitch = 0;
  int64_t width = 0, rows = 0;
};

/// Range [start, start + len) of `axis` of `whole` to or from a part that
/// holds just that range: toPart copies whole -> part.
inline Copy2D rangeCopy(const Shape &whole, int64_t axis, int64_t start,
                        int64_t len, int64_t elementBytes, bool toPart) {
  int64_t outer, extent, inner;
  aroundAxis(whole, axis, outer, extent, inner);
  int64_t run = inner * elementBytes;
  Copy2D c;
  c.width = len * run;
  c.rows = outer;
  int64_t wholeOffset = start * run, wholePitch = extent * run;
  int64_t partPitch = len * run;
  if (toPart) {
    c.srcOffset = wholeOffset;
    c.srcPitch = wholePitch;
    c.dstPitch = partPitch;
  } else {
    c.dstOffset = wholeOffset;
    c.dstPitch = wholePitch;
    c.srcPitch = partPitch;
  }
  return c;
}

} // namespace whale::rt::cuda

#endif
