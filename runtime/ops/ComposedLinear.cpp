//===- ComposedLinear.cpp - linear layers' epilogue ops from plain kernels ===//
//
// What a device without GEMM epilogues runs for whale_rt_linear and its two
// gradients (and for whale_rt_round_and_sum, a bias gradient with the
// rounding of the gradient it sums), and the reference a GPU's fused ones are
// tested against: the same kernels the unfused program would call, in its
// order. Each elementwise kernel reads and writes element by element, so
// working in place is safe. Operands a kernel reads only for their shapes are
// given as views of a buffer of that shape.
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

Status Device::linearWeightGrad(View<const float> x, View<const float> dout,
                                View<float> dw, View<float> dbias,
                                bool transW) {
  // The weight's gradient does not read the weight: dw's buffer stands in
  // for its shape. Neither does a sum's gradient read its operands.
  View<const float> wShape{dw.data, dw.shape};
  if (Status st = matmulBackward(x, wShape, dout, nullptr, &dw, false, transW);
      !st)
    return st;
  View<const float> biasShape{dbias.data, dbias.shape};
  return binaryBackward(BinaryOp::Add, dout, biasShape, dout, nullptr, &dbias);
}

Status Device::roundAndSum(View<const float> x, View<uint16_t> rounded,
                           View<float> sum) {
  if (Status st = toBf16(x, rounded); !st)
    return st;
  // A sum's gradient reads its operands' shapes only: sum's buffer stands
  // in for the bias.
  View<const float> bias{sum.data, sum.shape};
  return binaryBackward(BinaryOp::Add, x, bias, x, nullptr, &sum);
}

Status Device::geluMatmulGrad(View<const float> pre, View<const float> w,
                              View<const float> dout, View<float> dpre,
                              bool transW) {
  // The input's gradient does not read the input: pre has its shape.
  if (Status st = matmulBackward(pre, w, dout, &dpre, nullptr, false, transW);
      !st)
    return st;
  View<const float> product{dpre.data, dpre.shape};
  // The tanh GELU's derivative reads its input only (not its output).
  return unaryBackward(UnaryOp::Gelu, pre, pre, product, dpre);
}

} // namespace whale::rt
