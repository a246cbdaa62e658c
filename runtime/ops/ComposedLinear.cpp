//===- ComposedLinear.cpp - a linear layer's forward from three kernels ---===//
//
// What a device without GEMM epilogues runs for whale_rt_linear, and the
// reference a GPU's fused one is tested against: the product, the bias
// added in place, the sum copied out where the GELU's gradient will read
// it, and the GELU in place. Each kernel reads and writes element by
// element, so working in place is safe.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/Device.h"

namespace whale::rt {

Status Device::linear(View<const float> x, View<const float> w,
                      View<const float> bias, View<float> out, View<float> *pre,
                      bool transW, bool gelu) {
  if (Status st = matmul(x, w, out, false, transW); !st)
    return st;
  View<const float> product{out.data, out.shape};
  if (Status st = binary(BinaryOp::Add, product, bias, out); !st)
    return st;
  if (!gelu)
    return Status::ok();
  if (pre) {
    if (Status st = copy(pre->data, out.data, out.numel() * 4); !st)
      return st;
  }
  return unary(UnaryOp::Gelu, product, out);
}

} // namespace whale::rt
