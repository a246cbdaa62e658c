//===- Bf16Scratch.h - fp32 scratch for kernels composed on bf16 -*- C++
//-*-===//
//
// A device without native bf16 kernels composes them: the bf16 operands
// widened into fp32 scratch (exactly: every bf16 value is an fp32 value),
// the fp32 kernels, then each result rounded once to bf16 where it is
// stored so. These are the three steps, shared by the composed matmuls
// (ComposedBf16Matmul.cpp) and linear layers (ComposedBf16Linear.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_OPS_BF16SCRATCH_H
#define WHALE_RUNTIME_OPS_BF16SCRATCH_H

#include "runtime/core/Device.h"

namespace whale::rt::bf16scratch {

/// x widened into a new fp32 tensor on `dev`.
inline Status widen(Device &dev, View<const uint16_t> x, Tensor &out) {
  if (Status st = Tensor::create(dev, DType::F32, x.shape, out); !st)
    return st;
  return dev.fromBf16(x, out.view<float>());
}

/// `x` as fp32: itself when it is f32, else widened into `scratch`.
inline Status asF32(Device &dev, const MixedIn &x, Tensor &scratch,
                    View<const float> &f32) {
  if (x.dtype == DType::F32) {
    f32 = View<const float>{static_cast<const float *>(x.data), x.shape};
    return Status::ok();
  }
  if (Status st = widen(
          dev,
          View<const uint16_t>{static_cast<const uint16_t *>(x.data), x.shape},
          scratch);
      !st)
    return st;
  f32 = scratch.cview<float>();
  return Status::ok();
}

/// Where the fp32 kernel writes `out`: in place when it is f32, else into
/// `scratch`, which finish() rounds into it.
inline Status fp32Target(Device &dev, const MixedOut &out, Tensor &scratch,
                         View<float> &target) {
  if (out.dtype == DType::F32) {
    target = View<float>{static_cast<float *>(out.data), out.shape};
    return Status::ok();
  }
  if (Status st = Tensor::create(dev, DType::F32, out.shape, scratch); !st)
    return st;
  target = scratch.view<float>();
  return Status::ok();
}

/// `out` from the fp32 values in `target`: nothing to do when it is f32
/// (the kernel wrote it in place), else rounded once.
inline Status finish(Device &dev, const MixedOut &out, View<float> target) {
  if (out.dtype == DType::F32)
    return Status::ok();
  return dev.toBf16(
      View<const float>{target.data, target.shape},
      View<uint16_t>{static_cast<uint16_t *>(out.data), out.shape});
}

} // namespace whale::rt::bf16scratch

#endif
