//===- AttentionShape.h - what attention's operands must be ------*- C++ -*-===//
//
// q [..., T, E] against k and v [..., Tk, E]: the heads (every leading
// dimension together), T, Tk and E, or why the operands are not attention's.
// Inline, so the CUDA plugin, which carries its own copy of the device
// base, checks its operands as the CPU does.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_OPS_ATTENTIONSHAPE_H
#define WHALE_RUNTIME_OPS_ATTENTIONSHAPE_H

#include "runtime/core/Status.h"
#include "runtime/core/Tensor.h"

#include <string>

namespace whale::rt {

struct AttentionShape {
  int64_t heads = 1, t = 0, tk = 0, e = 0;
};

inline Status attentionShape(const char *op, View<const float> q,
                             View<const float> k, View<const float> v,
                             bool causal, AttentionShape &d) {
  if (q.rank() < 2 || k.shape != v.shape || q.rank() != k.rank() ||
      q.shape.back() != k.shape.back())
    return Status::invalid(std::string(op) + ": q " + shapeString(q.shape) +
                           ", k " + shapeString(k.shape) + " and v " +
                           shapeString(v.shape) + " are not [..., T, E] alike");
  d.t = q.shape[q.rank() - 2];
  d.tk = k.shape[k.rank() - 2];
  d.e = q.shape.back();
  d.heads = d.t > 0 && d.e > 0 ? q.numel() / (d.t * d.e) : 0;
  if (causal && d.t != d.tk)
    return Status::invalid(std::string(op) +
                           ": a causal mask needs as many keys as queries");
  return Status::ok();
}

} // namespace whale::rt

#endif
