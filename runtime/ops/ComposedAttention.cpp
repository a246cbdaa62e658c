//===- ComposedAttention.cpp - attention composed of a device's own ops ---===//
//
// The reference every fused attention kernel is tested against, and what a
// device without one runs: the scores, the mask, the softmax and the
// products as the unfused model computes them.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/Device.h"

namespace whale::rt {
namespace {

/// A tensor of `shape` on `dev`, or the device's error.
Status make(Device &dev, Shape shape, Tensor &out) {
  return Tensor::create(dev, DType::F32, std::move(shape), out);
}

/// [..., T, E] x [..., T, E] -> [..., T, T]: the scores' shape.
Shape scoresShape(const Shape &q, const Shape &k) {
  Shape s = q;
  s.back() = k[k.size() - 2];
  return s;
}

/// P = softmax(mask(q k^T * scale)) into `p`.
Status probabilities(Device &dev, View<const float> q, View<const float> k,
                     double scale, bool causal, Tensor &p) {
  Tensor raw, scaled, masked, factor;
  Shape shape = scoresShape(q.shape, k.shape);
  if (Status st = make(dev, shape, raw); !st)
    return st;
  if (Status st = make(dev, shape, scaled); !st)
    return st;
  if (Status st = make(dev, {}, factor); !st)
    return st;
  if (Status st = dev.fill(factor.raw(), DType::F32, 1, scale); !st)
    return st;
  if (Status st = dev.matmul(q, k, raw.view<float>(), false, true); !st)
    return st;
  if (Status st = dev.binary(BinaryOp::Mul, raw.cview<float>(),
                             factor.cview<float>(), scaled.view<float>());
      !st)
    return st;
  Tensor *logits = &scaled;
  if (causal) {
    if (Status st = make(dev, shape, masked); !st)
      return st;
    if (Status st = dev.causalMask(scaled.cview<float>(), masked.view<float>());
        !st)
      return st;
    logits = &masked;
  }
  if (Status st = make(dev, shape, p); !st)
    return st;
  const int64_t last = static_cast<int64_t>(shape.size()) - 1;
  return dev.softmax(logits->cview<float>(), last, p.view<float>());
}

} // namespace

Status Device::attention(View<const float> q, View<const float> k,
                         View<const float> v, double scale, bool causal,
                         View<float> out) {
  Tensor p;
  if (Status st = probabilities(*this, q, k, scale, causal, p); !st)
    return st;
  return matmul(p.cview<float>(), v, out, false, false);
}

Status Device::attentionBackward(View<const float> q, View<const float> k,
                                 View<const float> v, View<const float> out,
                                 View<const float> dout, double scale,
                                 bool causal, View<float> dq, View<float> dk,
                                 View<float> dv) {
  (void)out;
  Tensor p, dp, ds, dsMasked, dsScaled, factor;
  Shape shape = scoresShape(q.shape, k.shape);
  if (Status st = probabilities(*this, q, k, scale, causal, p); !st)
    return st;
  // dv = P^T dout; dP = dout v^T; dS = softmax'(P, dP), unmasked, scaled.
  if (Status st = matmul(p.cview<float>(), dout, dv, true, false); !st)
    return st;
  for (Tensor *t : {&dp, &ds, &dsMasked, &dsScaled})
    if (Status st = make(*this, shape, *t); !st)
      return st;
  if (Status st = matmul(dout, v, dp.view<float>(), false, true); !st)
    return st;
  const int64_t last = static_cast<int64_t>(shape.size()) - 1;
  if (Status st = softmaxBackward(p.cview<float>(), dp.cview<float>(), last,
                                  ds.view<float>());
      !st)
    return st;
  Tensor *grad = &ds;
  if (causal) {
    if (Status st =
            causalMaskBackward(ds.cview<float>(), dsMasked.view<float>());
        !st)
      return st;
    grad = &dsMasked;
  }
  if (Status st = make(*this, {}, factor); !st)
    return st;
  if (Status st = fill(factor.raw(), DType::F32, 1, scale); !st)
    return st;
  if (Status st = binary(BinaryOp::Mul, grad->cview<float>(),
                         factor.cview<float>(), dsScaled.view<float>());
      !st)
    return st;
  // dq = dS k; dk = dS^T q.
  if (Status st = matmul(dsScaled.cview<float>(), k, dq, false, false); !st)
    return st;
  return matmul(dsScaled.cview<float>(), q, dk, true, false);
}

} // namespace whale::rt
