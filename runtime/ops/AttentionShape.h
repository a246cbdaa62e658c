//===- AttentionShape.h - what attention's operands must be ------*- C++
//-*-===//
//
// q [..., T, E] against k and v [..., Tk, E]: the heads (every leading
// dimension together), T, Tk and E, or why the operands are not attention's.
// Keys and values may have fewer heads than queries (grouped-query
// attention): the heads' axis (the one before T, or H of [..., T, H, E]) of
// k and v divides q's, and each key head serves `kvGroup` consecutive
// query heads, as transformers' repeat_kv lays them out.
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

#include <algorithm>
#include <string>

namespace whale::rt {

struct AttentionShape {
  int64_t heads = 1, t = 0, tk = 0, e = 0;
  /// Heads of one batch entry (H of [..., T, H, E]); 0 when head-major.
  int64_t groupHeads = 0;
  /// Query heads a key head serves (1 unless keys are grouped).
  int64_t kvGroup = 1;

  /// Elements between consecutive rows of a query head.
  int64_t rowStride() const { return groupHeads ? groupHeads * e : e; }
  /// Where query head `h` (of `heads`) of an operand of `rows` rows a head
  /// starts.
  int64_t headOffset(int64_t h, int64_t rows) const {
    return offsetIn(groupHeads, h, rows);
  }
  /// The same for keys and values, whose heads are heads / kvGroup.
  int64_t keyHeads() const { return heads / kvGroup; }
  int64_t keyRowStride() const {
    return groupHeads ? groupHeads / kvGroup * e : e;
  }
  /// Where key head `kh` (of keyHeads()) starts in k, v, dk and dv.
  int64_t keyHeadOffset(int64_t kh) const {
    return offsetIn(groupHeads / kvGroup, kh, tk);
  }
  /// The key head query head `h` reads.
  int64_t keyHeadOf(int64_t h) const { return h / kvGroup; }

private:
  int64_t offsetIn(int64_t perEntry, int64_t h, int64_t rows) const {
    if (!perEntry)
      return h * rows * e;
    return (h / perEntry) * rows * perEntry * e + (h % perEntry) * e;
  }
};

/// (On fp32 operands, or on amp's bf16 ones: only the shapes count.)
template <class T>
Status attentionShape(const char *op, View<const T> q, View<const T> k,
                      View<const T> v, AttentionForm form, AttentionShape &d) {
  const int64_t seqAxis = form.sequenceMajor ? 3 : 2;
  const int64_t rank = q.rank();
  // The heads' axis: H of [..., T, H, E], or the one before T.
  const int64_t headAxis = form.sequenceMajor ? rank - 2 : rank - 3;
  bool alike = rank >= seqAxis && k.shape == v.shape && rank == k.rank() &&
               q.shape.back() == k.shape.back();
  for (int64_t a = 0; alike && a < rank - 1; ++a) {
    if (a == rank - seqAxis)
      continue;
    alike = a == headAxis && k.shape[a] > 0 ? q.shape[a] % k.shape[a] == 0
                                            : q.shape[a] == k.shape[a];
  }
  if (!alike)
    return Status::invalid(
        std::string(op) + ": q " + shapeString(q.shape) + ", k " +
        shapeString(k.shape) + " and v " + shapeString(v.shape) + " are not " +
        (form.sequenceMajor ? "[..., T, H, E]" : "[..., T, E]") +
        " alike (k's and v's heads may divide q's)");
  d.t = q.shape[rank - seqAxis];
  d.tk = k.shape[rank - seqAxis];
  d.e = q.shape.back();
  d.groupHeads = form.sequenceMajor ? q.shape[rank - 2] : 0;
  d.heads = d.t > 0 && d.e > 0 ? q.numel() / (d.t * d.e) : 0;
  if (headAxis >= 0 && k.shape[headAxis] > 0)
    d.kvGroup = std::max<int64_t>(1, q.shape[headAxis] / k.shape[headAxis]);
  if (form.causal && d.t != d.tk)
    return Status::invalid(std::string(op) +
                           ": a causal mask needs as many keys as queries");
  return Status::ok();
}

} // namespace whale::rt

#endif
