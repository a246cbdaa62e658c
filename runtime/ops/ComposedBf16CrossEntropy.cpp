//===- ComposedBf16CrossEntropy.cpp - the loss on amp's stored logits -----===//
//
// What a device without bf16 cross entropy kernels runs for
// whale_rt_cross_entropy and its gradient on logits stored in bf16, and
// the reference a GPU's kernels are tested against: the logits widened
// into fp32 scratch, exactly, then the fp32 ops. The loss, dloss and the
// logits' gradient are f32.
//
//===----------------------------------------------------------------------===//

#include "runtime/ops/Bf16Scratch.h"

namespace whale::rt {

using namespace bf16scratch;

Status Device::crossEntropyBf16(View<const uint16_t> logits, IndexView labels,
                                View<float> loss) {
  Tensor wide;
  if (Status st = widen(*this, logits, wide); !st)
    return st;
  return crossEntropy(wide.cview<float>(), labels, loss);
}

Status Device::crossEntropyBackwardBf16(View<const uint16_t> logits,
                                        IndexView labels,
                                        View<const float> dloss,
                                        View<float> dlogits) {
  Tensor wide;
  if (Status st = widen(*this, logits, wide); !st)
    return st;
  return crossEntropyBackward(wide.cview<float>(), labels, dloss, dlogits);
}

} // namespace whale::rt
