//===- ComposedBf16Linear.cpp - linear layers on amp's storage, composed --===//
//
// What a device without bf16 GEMM epilogues runs for whale_rt_linear and
// its two gradients on bf16 operands, and the reference a GPU's fused ones
// are tested against. Each widens its bf16 operands into fp32 scratch and
// runs the fp32 composition (ComposedLinear.cpp) on them: exact products
// of bf16 values summed in fp32, what a tensor core computes, with the
// epilogue applied to the fp32 sums and each result rounded once where it
// is stored in bf16.
//
//===----------------------------------------------------------------------===//

#include "runtime/ops/Bf16Scratch.h"

namespace whale::rt {

using namespace bf16scratch;

Status Device::linearBf16(View<const uint16_t> x, View<const uint16_t> w,
                          View<const float> bias, MixedOut out, MixedOut *pre,
                          bool transW, bool gelu) {
  Tensor wx, ww, outScratch, preScratch;
  View<float> outF32, preF32;
  if (Status st = widen(*this, x, wx); !st)
    return st;
  if (Status st = widen(*this, w, ww); !st)
    return st;
  if (Status st = fp32Target(*this, out, outScratch, outF32); !st)
    return st;
  if (pre)
    if (Status st = fp32Target(*this, *pre, preScratch, preF32); !st)
      return st;
  if (Status st = linear(wx.cview<float>(), ww.cview<float>(), bias, outF32,
                         pre ? &preF32 : nullptr, transW, gelu);
      !st)
    return st;
  if (pre)
    if (Status st = finish(*this, *pre, preF32); !st)
      return st;
  return finish(*this, out, outF32);
}

Status Device::linearWeightGradBf16(View<const uint16_t> x,
                                    View<const uint16_t> dout, View<float> dw,
                                    View<float> dbias, bool transW) {
  Tensor wx, wd;
  if (Status st = widen(*this, x, wx); !st)
    return st;
  if (Status st = widen(*this, dout, wd); !st)
    return st;
  return linearWeightGrad(wx.cview<float>(), wd.cview<float>(), dw, dbias,
                          transW);
}

Status Device::geluMatmulGradBf16(MixedIn pre, View<const uint16_t> w,
                                  View<const uint16_t> dout, MixedOut dpre,
                                  bool transW) {
  Tensor wp, ww, wd, scratch;
  View<const float> preF32;
  View<float> dpreF32;
  if (Status st = asF32(*this, pre, wp, preF32); !st)
    return st;
  if (Status st = widen(*this, w, ww); !st)
    return st;
  if (Status st = widen(*this, dout, wd); !st)
    return st;
  if (Status st = fp32Target(*this, dpre, scratch, dpreF32); !st)
    return st;
  if (Status st = geluMatmulGrad(preF32, ww.cview<float>(), wd.cview<float>(),
                                 dpreF32, transW);
      !st)
    return st;
  return finish(*this, dpre, dpreF32);
}

} // namespace whale::rt
