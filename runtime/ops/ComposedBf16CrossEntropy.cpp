//===- ComposedBf16CrossEntropy.cpp - the loss on amp's stored logits -----===//
//
// What a device without bf16 cross entropy kernels runs for
// whale_rt_cross_entropy and its gradient on logits stored in bf16, and
// the reference a GPU's kernels are tested against: the logits widened
// into fp32 scratch, exactly, then the fp32 ops. The loss, dloss and the
// logits' gradient are f32; the gradient's rounding and its bias's sum
// (whale_rt_cross_entropy_grad_rounded) are those of the f32 gradient,
// computed into scratch.
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

Status Device::crossEntropyBackwardRounded(MixedIn logits, IndexView labels,
                                           View<const float> dloss,
                                           View<uint16_t> rounded,
                                           View<float> sum) {
  Tensor grad;
  if (Status st = Tensor::create(*this, DType::F32, logits.shape, grad); !st)
    return st;
  Status st =
      logits.dtype == DType::BF16
          ? crossEntropyBackwardBf16(
                View<const uint16_t>{static_cast<const uint16_t *>(logits.data),
                                     logits.shape},
                labels, dloss, grad.view<float>())
          : crossEntropyBackward(
                View<const float>{static_cast<const float *>(logits.data),
                                  logits.shape},
                labels, dloss, grad.view<float>());
  if (!st)
    return st;
  return roundAndSum(grad.cview<float>(), rounded, sum);
}

} // namespace whale::rt
