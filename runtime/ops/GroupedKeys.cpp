//===- GroupedKeys.cpp - grouped keys repeated for devices without -------===//

#include "runtime/ops/GroupedKeys.h"

#include "runtime/ops/AttentionShape.h"

namespace whale::rt {
namespace {

/// The axis of k's heads: H of [..., T, H, E], or the one before T.
int64_t headAxisOf(const Shape &k, AttentionForm form) {
  return static_cast<int64_t>(k.size()) - (form.sequenceMajor ? 2 : 3);
}

/// `kv` with an axis of `n` after its heads' axis: [..., Hk, n, ...].
Shape withGroupAxis(const Shape &kv, int64_t headAxis, int64_t n) {
  Shape s = kv;
  s.insert(s.begin() + headAxis + 1, n);
  return s;
}

/// `kv`'s heads each repeated `group` times in a row, into `out` (made
/// here): the query heads' count of key heads.
Status repeatHeads(Device &dev, View<const float> kv, int64_t group,
                   AttentionForm form, Tensor &out) {
  const int64_t axis = headAxisOf(kv.shape, form);
  Shape wide = kv.shape;
  wide[axis] *= group;
  if (Status st = Tensor::create(dev, DType::F32, wide, out); !st)
    return st;
  return dev.broadcastTo(
      View<const float>{kv.data, withGroupAxis(kv.shape, axis, 1)},
      View<float>{out.view<float>().data,
                  withGroupAxis(kv.shape, axis, group)});
}

/// The repeated heads' gradients `wide` summed over each group into `out`.
Status sumGroups(Device &dev, View<const float> wide, int64_t group,
                 AttentionForm form, View<float> out) {
  const int64_t axis = headAxisOf(out.shape, form);
  return dev.reduce(
      ReduceOp::Sum,
      View<const float>{wide.data, withGroupAxis(out.shape, axis, group)},
      {axis + 1}, out);
}

} // namespace

Status attentionOverRepeatedKeys(Device &dev, View<const float> q,
                                 View<const float> k, View<const float> v,
                                 double scale, AttentionForm form,
                                 View<float> out) {
  AttentionShape d;
  if (Status st = attentionShape("attention", q, k, v, form, d); !st)
    return st;
  Tensor wk, wv;
  for (auto [x, w] : {std::pair{&k, &wk}, {&v, &wv}})
    if (Status st = repeatHeads(dev, *x, d.kvGroup, form, *w); !st)
      return st;
  return dev.attention(q, wk.cview<float>(), wv.cview<float>(), scale, form,
                       out);
}

Status attentionBackwardOverRepeatedKeys(
    Device &dev, View<const float> q, View<const float> k, View<const float> v,
    View<const float> out, View<const float> dout, double scale,
    AttentionForm form, View<float> dq, View<float> dk, View<float> dv) {
  AttentionShape d;
  if (Status st = attentionShape("attention_grad", q, k, v, form, d); !st)
    return st;
  Tensor wk, wv, dwk, dwv;
  for (auto [x, w] : {std::pair{&k, &wk}, {&v, &wv}})
    if (Status st = repeatHeads(dev, *x, d.kvGroup, form, *w); !st)
      return st;
  for (Tensor *g : {&dwk, &dwv})
    if (Status st = Tensor::create(dev, DType::F32, wk.shape(), *g); !st)
      return st;
  if (Status st = dev.attentionBackward(q, wk.cview<float>(), wv.cview<float>(),
                                        out, dout, scale, form, dq,
                                        dwk.view<float>(), dwv.view<float>());
      !st)
    return st;
  if (Status st = sumGroups(dev, dwk.cview<float>(), d.kvGroup, form, dk); !st)
    return st;
  return sumGroups(dev, dwv.cview<float>(), d.kvGroup, form, dv);
}

} // namespace whale::rt
