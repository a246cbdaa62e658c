//===- ComposedAttention.cpp - attention composed of a device's own ops ---===//
//
// The reference every fused attention kernel is tested against, and what a
// device without one runs: the scores, the mask, the softmax and the
// products as the unfused model computes them. Sequence-major operands
// ([..., T, H, E]) are permuted to head-major ones and back, as the model
// did before -whale-fuse-attention folded its permutes into the op.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/Device.h"
#include "runtime/ops/AttentionShape.h"
#include "runtime/ops/GroupedKeys.h"

#include <utility>
#include <vector>

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

/// The permutation that swaps T and H of [..., T, H, E]: its own inverse.
std::vector<int64_t> swapSequenceAndHeads(int64_t rank) {
  std::vector<int64_t> perm(static_cast<size_t>(rank));
  for (int64_t i = 0; i < rank; ++i)
    perm[static_cast<size_t>(i)] = i;
  std::swap(perm[static_cast<size_t>(rank - 3)],
            perm[static_cast<size_t>(rank - 2)]);
  return perm;
}

/// Sequence-major operands as head-major tensors on `dev`, and head-major
/// results permuted back into the caller's sequence-major ones.
struct HeadMajor {
  Device &dev;
  std::vector<Tensor> held;

  /// `x` [..., T, H, E] as [..., H, T, E].
  Status in(View<const float> x, View<const float> &out) {
    const std::vector<int64_t> perm = swapSequenceAndHeads(x.rank());
    Shape shape = x.shape;
    std::swap(shape[shape.size() - 3], shape[shape.size() - 2]);
    held.emplace_back();
    if (Status st = make(dev, shape, held.back()); !st)
      return st;
    if (Status st = dev.transpose(x, perm, held.back().view<float>()); !st)
      return st;
    out = held.back().cview<float>();
    return Status::ok();
  }
  /// Scratch of `x`'s head-major shape, to be put back by `back`.
  Status scratch(View<float> x, View<float> &out) {
    Shape shape = x.shape;
    std::swap(shape[shape.size() - 3], shape[shape.size() - 2]);
    held.emplace_back();
    if (Status st = make(dev, shape, held.back()); !st)
      return st;
    out = held.back().view<float>();
    return Status::ok();
  }
  Status back(View<float> headMajor, View<float> x) {
    return dev.transpose(View<const float>{headMajor.data, headMajor.shape},
                         swapSequenceAndHeads(x.rank()), x);
  }
};

} // namespace

Status Device::attention(View<const float> q, View<const float> k,
                         View<const float> v, double scale, AttentionForm form,
                         View<float> out) {
  AttentionShape d;
  if (Status st = attentionShape("attention", q, k, v, form, d); !st)
    return st;
  if (d.kvGroup > 1)
    return attentionOverRepeatedKeys(*this, q, k, v, scale, form, out);
  if (form.sequenceMajor) {
    if (q.rank() < 3)
      return Status::invalid("attention: sequence-major q " +
                             shapeString(q.shape) + " is not [..., T, H, E]");
    HeadMajor h{*this, {}};
    View<const float> qh, kh, vh;
    View<float> oh;
    for (auto [x, y] : {std::pair{&q, &qh}, {&k, &kh}, {&v, &vh}})
      if (Status st = h.in(*x, *y); !st)
        return st;
    if (Status st = h.scratch(out, oh); !st)
      return st;
    if (Status st = attention(qh, kh, vh, scale, {form.causal, false}, oh); !st)
      return st;
    return h.back(oh, out);
  }
  Tensor p;
  if (Status st = probabilities(*this, q, k, scale, form.causal, p); !st)
    return st;
  return matmul(p.cview<float>(), v, out, false, false);
}

Status Device::attentionBackward(View<const float> q, View<const float> k,
                                 View<const float> v, View<const float> out,
                                 View<const float> dout, double scale,
                                 AttentionForm form, View<float> dq,
                                 View<float> dk, View<float> dv) {
  AttentionShape d;
  if (Status st = attentionShape("attention_grad", q, k, v, form, d); !st)
    return st;
  if (d.kvGroup > 1)
    return attentionBackwardOverRepeatedKeys(*this, q, k, v, out, dout, scale,
                                             form, dq, dk, dv);
  if (form.sequenceMajor) {
    if (q.rank() < 3)
      return Status::invalid("attention_grad: sequence-major q " +
                             shapeString(q.shape) + " is not [..., T, H, E]");
    HeadMajor h{*this, {}};
    View<const float> qh, kh, vh, oh, doh;
    View<float> dqh, dkh, dvh;
    for (auto [x, y] :
         {std::pair{&q, &qh}, {&k, &kh}, {&v, &vh}, {&out, &oh}, {&dout, &doh}})
      if (Status st = h.in(*x, *y); !st)
        return st;
    for (auto [x, y] : {std::pair{&dq, &dqh}, {&dk, &dkh}, {&dv, &dvh}})
      if (Status st = h.scratch(*x, *y); !st)
        return st;
    if (Status st = attentionBackward(qh, kh, vh, oh, doh, scale,
                                      {form.causal, false}, dqh, dkh, dvh);
        !st)
      return st;
    for (auto [x, y] : {std::pair{&dqh, &dq}, {&dkh, &dk}, {&dvh, &dv}})
      if (Status st = h.back(*x, *y); !st)
        return st;
    return Status::ok();
  }
  (void)out;
  const bool causal = form.causal;
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
