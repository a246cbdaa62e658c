//===- AttentionShape.h - what attention's operands must be ------*- C++
//-*-===//
//
// q [..., T, E] against k and v [..., Tk, E]: the heads (every leading
// dimension together), T, Tk and E, or why the operands are not attention's.
// Sequence-major operands are [..., T, H, E], as a linear layer's output
// split into heads is before any permute: head h of batch entry b starts
// at b T H E + h E, and its rows are H E apart. Inline, so the CUDA plugin,
// which carries its own copy of the device base, checks its operands as
// the CPU does.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_OPS_ATTENTIONSHAPE_H
#define WHALE_RUNTIME_OPS_ATTENTIONSHAPE_H

#include "runtime/core/Device.h"

#include <string>

namespace whale::rt {

struct AttentionShape {
  int64_t heads = 1, t = 0, tk = 0, e = 0;
  /// Heads of one batch entry (H of [..., T, H, E]); 0 when head-major.
  int64_t groupHeads = 0;

  /// Elements between consecutive rows of a head.
  int64_t rowStride() const { return groupHeads ? groupHeads * e : e; }
  /// Where head `h` (of `heads`) of an operand of `rows` rows a head starts.
  int64_t headOffset(int64_t h, int64_t rows) const {
    if (!groupHeads)
      return h * rows * e;
    return (h / groupHeads) * rows * groupHeads * e + (h % groupHeads) * e;
  }
};

/// (On fp32 operands, or on amp's bf16 ones: only the shapes count.)
template <class T>
Status attentionShape(const char *op, View<const T> q, View<const T> k,
                      View<const T> v, AttentionForm form, AttentionShape &d) {
  const int64_t seqAxis = form.sequenceMajor ? 3 : 2;
  if (q.rank() < seqAxis || k.shape != v.shape || q.rank() != k.rank() ||
      q.shape.back() != k.shape.back() ||
      (form.sequenceMajor && q.shape[q.rank() - 2] != k.shape[k.rank() - 2]))
    return Status::invalid(
        std::string(op) + ": q " + shapeString(q.shape) + ", k " +
        shapeString(k.shape) + " and v " + shapeString(v.shape) + " are not " +
        (form.sequenceMajor ? "[..., T, H, E]" : "[..., T, E]") + " alike");
  d.t = q.shape[q.rank() - seqAxis];
  d.tk = k.shape[k.rank() - seqAxis];
  d.e = q.shape.back();
  d.groupHeads = form.sequenceMajor ? q.shape[q.rank() - 2] : 0;
  d.heads = d.t > 0 && d.e > 0 ? q.numel() / (d.t * d.e) : 0;
  if (form.causal && d.t != d.tk)
    return Status::invalid(std::string(op) +
                           ": a causal mask needs as many keys as queries");
  return Status::ok();
}

} // namespace whale::rt

#endif
