//===- ComposedBf16Attention.cpp - attention on amp's storage, composed ---===//
//
// What a device without bf16 attention kernels runs for whale_rt_attention
// and its gradient on bf16 operands, and the reference a GPU's flash
// kernels are tested against: the operands (and the forward's output)
// widened into fp32 scratch, exactly, then the fp32 ops, the output
// rounded once where it is stored in bf16.
//
//===----------------------------------------------------------------------===//

#include "runtime/ops/Bf16Scratch.h"

namespace whale::rt {

using namespace bf16scratch;

Status Device::attentionBf16(View<const uint16_t> q, View<const uint16_t> k,
                             View<const uint16_t> v, double scale,
                             AttentionForm form, MixedOut out) {
  Tensor wq, wk, wv, outScratch;
  View<float> outF32;
  for (auto [x, w] : {std::pair{&q, &wq}, {&k, &wk}, {&v, &wv}})
    if (Status st = widen(*this, *x, *w); !st)
      return st;
  if (Status st = fp32Target(*this, out, outScratch, outF32); !st)
    return st;
  if (Status st = attention(wq.cview<float>(), wk.cview<float>(),
                            wv.cview<float>(), scale, form, outF32);
      !st)
    return st;
  return finish(*this, out, outF32);
}

Status Device::attentionBackwardBf16(
    View<const uint16_t> q, View<const uint16_t> k, View<const uint16_t> v,
    View<const uint16_t> out, View<const float> dout, double scale,
    AttentionForm form, View<float> dq, View<float> dk, View<float> dv) {
  Tensor wq, wk, wv, wo;
  for (auto [x, w] : {std::pair{&q, &wq}, {&k, &wk}, {&v, &wv}, {&out, &wo}})
    if (Status st = widen(*this, *x, *w); !st)
      return st;
  return attentionBackward(wq.cview<float>(), wk.cview<float>(),
                           wv.cview<float>(), wo.cview<float>(), dout, scale,
                           form, dq, dk, dv);
}

} // namespace whale::rt
