// RUN: whale-opt %s -split-input-file -whale-gemm-epilogues | FileCheck %s

// A linear layer's product and bias: one op. The bias's gradient reads the
// sum's operands for their shapes only, so it reads its own dout (of the
// product's type) in the product's place, and keeps no forward value
// alive into the backward.
// CHECK-LABEL: func.func @bias
// CHECK-NOT: whale.matmul
// CHECK-NOT: whale.add
// CHECK: %[[Y:.*]] = whale.linear %arg0, %arg1, %arg2 : tensor<8x16xf32>, tensor<16x32xf32>, tensor<32xf32> -> tensor<8x32xf32>
// CHECK: whale.binary_grad add %arg3, %arg2, %arg3 operand = 1
// CHECK: return %[[Y]]
func.func @bias(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>, %b: tensor<32xf32>, %dy: tensor<8x32xf32>) -> (tensor<8x32xf32>, tensor<32xf32>) {
  %z = whale.matmul %x, %w : tensor<8x16xf32>, tensor<16x32xf32> -> tensor<8x32xf32>
  %y = whale.add %z, %b : tensor<8x32xf32>, tensor<32xf32> -> tensor<8x32xf32>
  %db = whale.binary_grad add %z, %b, %dy operand = 1 : tensor<8x32xf32>, tensor<32xf32>, tensor<8x32xf32> -> tensor<32xf32>
  return %y, %db : tensor<8x32xf32>, tensor<32xf32>
}

// -----

// The GELU joins it; the sum stays as the preactivation for the GELU's
// gradient, which reads it. A weight stored [N, K] keeps its transpose; the
// bias may come first in the sum; a batch of rows is one product.
// CHECK-LABEL: func.func @gelu
// CHECK: %[[H:.*]], %[[PRE:.*]] = whale.linear %arg0, %arg1, %arg2 gelu {transpose_weight} : tensor<2x8x16xf32>, tensor<64x16xf32>, tensor<64xf32> -> tensor<2x8x64xf32>, tensor<2x8x64xf32>
// CHECK: whale.unary_grad gelu %[[PRE]], %[[H]], %arg3
// CHECK-NOT: whale.gelu
func.func @gelu(%x: tensor<2x8x16xf32>, %w: tensor<64x16xf32>, %b: tensor<64xf32>, %dh: tensor<2x8x64xf32>) -> (tensor<2x8x64xf32>, tensor<2x8x64xf32>) {
  %z = whale.matmul %x, %w {transpose_rhs} : tensor<2x8x16xf32>, tensor<64x16xf32> -> tensor<2x8x64xf32>
  %y = whale.add %b, %z : tensor<64xf32>, tensor<2x8x64xf32> -> tensor<2x8x64xf32>
  %h = whale.gelu %y : tensor<2x8x64xf32>
  %dy = whale.unary_grad gelu %y, %h, %dh : tensor<2x8x64xf32>
  return %h, %dy : tensor<2x8x64xf32>, tensor<2x8x64xf32>
}

// -----

// Only the GELU reads the sum (a forward alone): no preactivation.
// CHECK-LABEL: func.func @inference
// CHECK: %[[H:.*]] = whale.linear %arg0, %arg1, %arg2 gelu : tensor<8x16xf32>, tensor<16x32xf32>, tensor<32xf32> -> tensor<8x32xf32>
// CHECK-NEXT: return %[[H]]
func.func @inference(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>, %b: tensor<32xf32>) -> tensor<8x32xf32> {
  %z = whale.matmul %x, %w : tensor<8x16xf32>, tensor<16x32xf32> -> tensor<8x32xf32>
  %y = whale.add %z, %b : tensor<8x32xf32>, tensor<32xf32> -> tensor<8x32xf32>
  %h = whale.gelu %y : tensor<8x32xf32>
  return %h : tensor<8x32xf32>
}

// -----

// Left alone: a product something else reads too, a bias that is not one
// value a column, a transposed left side, a batch of weights.
// CHECK-LABEL: func.func @not_layers
// CHECK-NOT: whale.linear
// CHECK-COUNT-4: whale.matmul
func.func @not_layers(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>, %b: tensor<32xf32>, %rows: tensor<8x1xf32>, %xt: tensor<16x8xf32>, %xb: tensor<2x8x16xf32>, %wb: tensor<2x16x32xf32>) -> (tensor<8x32xf32>, tensor<8x32xf32>, tensor<8x32xf32>, tensor<8x32xf32>, tensor<2x8x32xf32>) {
  %z = whale.matmul %x, %w : tensor<8x16xf32>, tensor<16x32xf32> -> tensor<8x32xf32>
  %y = whale.add %z, %b : tensor<8x32xf32>, tensor<32xf32> -> tensor<8x32xf32>
  %r = whale.relu %z : tensor<8x32xf32>
  %z2 = whale.matmul %x, %w : tensor<8x16xf32>, tensor<16x32xf32> -> tensor<8x32xf32>
  %y2 = whale.add %z2, %rows : tensor<8x32xf32>, tensor<8x1xf32> -> tensor<8x32xf32>
  %z3 = whale.matmul %xt, %w {transpose_lhs} : tensor<16x8xf32>, tensor<16x32xf32> -> tensor<8x32xf32>
  %y3 = whale.add %z3, %b : tensor<8x32xf32>, tensor<32xf32> -> tensor<8x32xf32>
  %z4 = whale.matmul %xb, %wb : tensor<2x8x16xf32>, tensor<2x16x32xf32> -> tensor<2x8x32xf32>
  %y4 = whale.add %z4, %b : tensor<2x8x32xf32>, tensor<32xf32> -> tensor<2x8x32xf32>
  return %y, %r, %y2, %y3, %y4 : tensor<8x32xf32>, tensor<8x32xf32>, tensor<8x32xf32>, tensor<8x32xf32>, tensor<2x8x32xf32>
}

// -----

// A weight's gradient and the bias gradient of the same output gradient:
// one op, the bias summed in the weight GEMM's epilogue. The sum's
// gradient for its other operand (the output's gradient as it is) is
// forwarded first, so the pattern sees the gradient both read. A weight
// stored [N, K] keeps its transpose; a batch of rows is one product.
// CHECK-LABEL: func.func @weight_grad
// CHECK-NOT: whale.binary_grad
// CHECK: %[[DX:.*]] = whale.matmul_grad %arg0, %arg1, %arg3 operand = 0 {transpose_rhs}
// CHECK: %[[DW:.*]], %[[DB:.*]] = whale.linear_weight_grad %arg0, %arg3 {transpose_weight} : tensor<2x8x16xf32>, tensor<2x8x32xf32> -> tensor<32x16xf32>, tensor<32xf32>
// CHECK: return %[[DX]], %[[DW]], %[[DB]]
func.func @weight_grad(%x: tensor<2x8x16xf32>, %w: tensor<32x16xf32>, %b: tensor<32xf32>, %dy: tensor<2x8x32xf32>, %z: tensor<2x8x32xf32>) -> (tensor<2x8x16xf32>, tensor<32x16xf32>, tensor<32xf32>) {
  %dz = whale.binary_grad add %z, %b, %dy operand = 0 : tensor<2x8x32xf32>, tensor<32xf32>, tensor<2x8x32xf32> -> tensor<2x8x32xf32>
  %db = whale.binary_grad add %z, %b, %dy operand = 1 : tensor<2x8x32xf32>, tensor<32xf32>, tensor<2x8x32xf32> -> tensor<32xf32>
  %dx = whale.matmul_grad %x, %w, %dz operand = 0 {transpose_rhs} : tensor<2x8x16xf32>, tensor<32x16xf32>, tensor<2x8x32xf32> -> tensor<2x8x16xf32>
  %dw = whale.matmul_grad %x, %w, %dz operand = 1 {transpose_rhs} : tensor<2x8x16xf32>, tensor<32x16xf32>, tensor<2x8x32xf32> -> tensor<32x16xf32>
  return %dx, %dw, %db : tensor<2x8x16xf32>, tensor<32x16xf32>, tensor<32xf32>
}

// -----

// An MLP's second layer: its input's gradient, read only by the gradient
// of the GELU that made the input, is one op with the GELU's derivative in
// the epilogue; what it reads is the preactivation, the weight and the
// output's gradient.
// CHECK-LABEL: func.func @gelu_grad
// CHECK-NOT: whale.unary_grad
// CHECK: %[[DPRE:.*]] = whale.gelu_matmul_grad %arg0, %arg2, %arg3 : tensor<8x64xf32>, tensor<64x16xf32>, tensor<8x16xf32> -> tensor<8x64xf32>
// CHECK: return %[[DPRE]]
func.func @gelu_grad(%pre: tensor<8x64xf32>, %h: tensor<8x64xf32>, %w: tensor<64x16xf32>, %dy: tensor<8x16xf32>) -> tensor<8x64xf32> {
  %dh = whale.matmul_grad %h, %w, %dy operand = 0 : tensor<8x64xf32>, tensor<64x16xf32>, tensor<8x16xf32> -> tensor<8x64xf32>
  %dpre = whale.unary_grad gelu %pre, %h, %dh : tensor<8x64xf32>
  return %dpre : tensor<8x64xf32>
}

// -----

// Left alone: a bias gradient of another output gradient, a weight's
// gradient through a transposed input, an input's gradient something else
// reads too, another derivative than the GELU's, and bf16 (amp's storage).
// CHECK-LABEL: func.func @not_gradients
// CHECK-NOT: whale.linear_weight_grad
// CHECK-NOT: whale.gelu_matmul_grad
// CHECK-COUNT-2: whale.binary_grad add
// CHECK-COUNT-3: whale.matmul_grad
// CHECK-COUNT-2: whale.unary_grad
// CHECK: whale.matmul_grad
func.func @not_gradients(%x: tensor<8x16xf32>, %xt: tensor<16x8xf32>, %w: tensor<16x32xf32>, %b: tensor<32xf32>, %z: tensor<8x32xf32>, %dy: tensor<8x32xf32>, %other: tensor<8x32xf32>, %pre: tensor<8x16xf32>, %w2: tensor<16x32xbf16>, %xb: tensor<8x16xbf16>, %dyb: tensor<8x32xbf16>, %zb: tensor<8x32xbf16>, %bb: tensor<32xbf16>) -> (tensor<32xf32>, tensor<16x32xf32>, tensor<16x32xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<32xbf16>, tensor<16x32xf32>) {
  %db = whale.binary_grad add %z, %b, %other operand = 1 : tensor<8x32xf32>, tensor<32xf32>, tensor<8x32xf32> -> tensor<32xf32>
  %dbb = whale.binary_grad add %zb, %bb, %dyb operand = 1 : tensor<8x32xbf16>, tensor<32xbf16>, tensor<8x32xbf16> -> tensor<32xbf16>
  %dw = whale.matmul_grad %x, %w, %dy operand = 1 : tensor<8x16xf32>, tensor<16x32xf32>, tensor<8x32xf32> -> tensor<16x32xf32>
  %dwt = whale.matmul_grad %xt, %w, %other operand = 1 {transpose_lhs} : tensor<16x8xf32>, tensor<16x32xf32>, tensor<8x32xf32> -> tensor<16x32xf32>
  %dh = whale.matmul_grad %x, %w, %dy operand = 0 : tensor<8x16xf32>, tensor<16x32xf32>, tensor<8x32xf32> -> tensor<8x16xf32>
  %dpre = whale.unary_grad gelu %pre, %x, %dh : tensor<8x16xf32>
  %dt = whale.unary_grad tanh %pre, %x, %dh : tensor<8x16xf32>
  %dwb = whale.matmul_grad %xb, %w2, %dyb operand = 1 : tensor<8x16xbf16>, tensor<16x32xbf16>, tensor<8x32xbf16> -> tensor<16x32xf32>
  return %db, %dw, %dwt, %dh, %dpre, %dt, %dbb, %dwb : tensor<32xf32>, tensor<16x32xf32>, tensor<16x32xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<32xbf16>, tensor<16x32xf32>
}

// -----

// A layernorm's input gradient added to the residual's gradient: one
// layernorm_grad with `plus`, where the sum stood (dgamma and dbeta are
// read after it). Either order of the sum.
// CHECK-LABEL: func.func @residual
// CHECK-NOT: whale.add
// CHECK: %[[DX:.*]], %[[DG:.*]], %[[DB:.*]] = whale.layernorm_grad %arg0, %arg1, %arg2 plus %arg3 eps = 1.000000e-05 : tensor<8x16xf32>, tensor<16xf32>, tensor<8x16xf32>
// CHECK: %[[DX2:.*]], %{{.*}}, %{{.*}} = whale.layernorm_grad %arg0, %arg1, %arg2 plus %[[DX]] eps
// CHECK: return %[[DX2]], %[[DG]], %[[DB]]
func.func @residual(%x: tensor<8x16xf32>, %g: tensor<16xf32>, %dy: tensor<8x16xf32>, %r: tensor<8x16xf32>) -> (tensor<8x16xf32>, tensor<16xf32>, tensor<16xf32>) {
  %dx, %dg, %db = whale.layernorm_grad %x, %g, %dy eps = 1.000000e-05 : tensor<8x16xf32>, tensor<16xf32>
  %s = whale.add %r, %dx : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
  %dx2, %dg2, %db2 = whale.layernorm_grad %x, %g, %dy eps = 1.000000e-05 : tensor<8x16xf32>, tensor<16xf32>
  %s2 = whale.add %dx2, %s : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
  return %s2, %dg, %db : tensor<8x16xf32>, tensor<16xf32>, tensor<16xf32>
}

// -----

// RMSNorm's input gradient likewise (a Llama block's): dweight read after.
// CHECK-LABEL: func.func @rms_residual
// CHECK-NOT: whale.add
// CHECK: %[[DX:.*]], %[[DW:.*]] = whale.rms_norm_grad %arg0, %arg1, %arg2 plus %arg3 eps = 1.000000e-05 : tensor<8x16xf32>, tensor<16xf32>, tensor<8x16xf32>
// CHECK: return %[[DX]], %[[DW]]
func.func @rms_residual(%x: tensor<8x16xf32>, %w: tensor<16xf32>, %dy: tensor<8x16xf32>, %r: tensor<8x16xf32>) -> (tensor<8x16xf32>, tensor<16xf32>) {
  %dx, %dw = whale.rms_norm_grad %x, %w, %dy eps = 1.000000e-05 : tensor<8x16xf32>, tensor<16xf32>
  %s = whale.add %dx, %r : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
  return %s, %dw : tensor<8x16xf32>, tensor<16xf32>
}

// -----

// dgamma is read between the two, and the residual gradient is made after
// the layernorm's: neither place serves, so nothing is fused. Nor where dx
// has another reader, or the sum broadcasts.
// CHECK-LABEL: func.func @residual_kept
// CHECK-NOT: plus
// CHECK-COUNT-3: whale.add
func.func @residual_kept(%x: tensor<8x16xf32>, %g: tensor<16xf32>, %dy: tensor<8x16xf32>, %r: tensor<8x16xf32>, %b: tensor<16xf32>) -> (tensor<8x16xf32>, tensor<16xf32>, tensor<8x16xf32>, tensor<8x16xf32>) {
  %dx, %dg, %db = whale.layernorm_grad %x, %g, %dy eps = 1.000000e-05 : tensor<8x16xf32>, tensor<16xf32>
  %dg2 = whale.add %dg, %db : tensor<16xf32>, tensor<16xf32> -> tensor<16xf32>
  %late = whale.neg %r : tensor<8x16xf32>
  %s = whale.add %late, %dx : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
  %dx2, %dg3, %db3 = whale.layernorm_grad %x, %g, %dy eps = 1.000000e-05 : tensor<8x16xf32>, tensor<16xf32>
  %s2 = whale.add %dx2, %b : tensor<8x16xf32>, tensor<16xf32> -> tensor<8x16xf32>
  return %s, %dg2, %s2, %dx2 : tensor<8x16xf32>, tensor<16xf32>, tensor<8x16xf32>, tensor<8x16xf32>
}

// -----

// Under amp's storage: a bf16 product widened for its bias add, and a GELU
// rounded for the next product, are one linear layer on the bf16 operands
// whose output is stored rounded; the preactivation stays f32 for the
// GELU's gradient (which reads the output for its shape, widened). The
// product's widening and the output's rounding are gone.
// CHECK-LABEL: func.func @amp_forward
// CHECK: %[[H:.*]], %[[PRE:.*]] = whale.linear %arg0, %arg1, %arg2 gelu : tensor<8x16xbf16>, tensor<16x32xbf16>, tensor<32xf32> -> tensor<8x32xbf16>, tensor<8x32xf32>
// CHECK-NEXT: %[[HW:.*]] = whale.cast %[[H]] : tensor<8x32xbf16> to tensor<8x32xf32>
// CHECK-NEXT: whale.unary_grad gelu %[[PRE]], %[[HW]], %arg3
// CHECK-NEXT: return %[[H]]
func.func @amp_forward(%x: tensor<8x16xbf16>, %w: tensor<16x32xbf16>, %b: tensor<32xf32>, %dh: tensor<8x32xf32>) -> (tensor<8x32xbf16>, tensor<8x32xf32>) {
  %z = whale.matmul %x, %w : tensor<8x16xbf16>, tensor<16x32xbf16> -> tensor<8x32xbf16>
  %zw = whale.cast %z : tensor<8x32xbf16> to tensor<8x32xf32>
  %y = whale.add %zw, %b : tensor<8x32xf32>, tensor<32xf32> -> tensor<8x32xf32>
  %h = whale.gelu %y : tensor<8x32xf32>
  %hb = whale.cast %h : tensor<8x32xf32> to tensor<8x32xbf16>
  %hw = whale.cast %hb : tensor<8x32xbf16> to tensor<8x32xf32>
  %dy = whale.unary_grad gelu %y, %hw, %dh : tensor<8x32xf32>
  return %hb, %dy : tensor<8x32xbf16>, tensor<8x32xf32>
}

// -----

// A layer whose output is stored rounded (every reader rounds it: here a
// head split for a bf16 attention): its bias's gradient reads its dout for
// the sum's shape, so no fp32 copy of the output is made for it.
// CHECK-LABEL: func.func @amp_rounded_bias_gradient
// CHECK: %[[Y:.*]] = whale.linear %arg0, %arg1, %arg2 : tensor<8x16xbf16>, tensor<16x32xbf16>, tensor<32xf32> -> tensor<8x32xbf16>
// CHECK-NOT: whale.cast
// CHECK: whale.reshape %[[Y]] : tensor<8x32xbf16> -> tensor<8x4x8xbf16>
// CHECK-NEXT: whale.binary_grad add %arg3, %arg2, %arg3 operand = 1
func.func @amp_rounded_bias_gradient(%x: tensor<8x16xbf16>, %w: tensor<16x32xbf16>, %b: tensor<32xf32>, %dy: tensor<8x32xf32>) -> (tensor<8x4x8xbf16>, tensor<32xf32>) {
  %z = whale.matmul %x, %w : tensor<8x16xbf16>, tensor<16x32xbf16> -> tensor<8x32xbf16>
  %zw = whale.cast %z : tensor<8x32xbf16> to tensor<8x32xf32>
  %y = whale.add %zw, %b : tensor<8x32xf32>, tensor<32xf32> -> tensor<8x32xf32>
  %yb = whale.cast %y : tensor<8x32xf32> to tensor<8x32xbf16>
  %h = whale.reshape %yb : tensor<8x32xbf16> -> tensor<8x4x8xbf16>
  %db = whale.binary_grad add %zw, %b, %dy operand = 1 : tensor<8x32xf32>, tensor<32xf32>, tensor<8x32xf32> -> tensor<32xf32>
  return %h, %db : tensor<8x4x8xbf16>, tensor<32xf32>
}

// -----

// A bias gradient joins a weight's bf16 GEMM where it sums the values that
// GEMM reads (their widening), not where it sums the fp32 values they were
// rounded from: fused, that sum would change with the fusion.
// CHECK-LABEL: func.func @amp_weight_grad
// CHECK: %[[DW:.*]], %[[DB:.*]] = whale.linear_weight_grad %arg0, %arg1 : tensor<8x16xbf16>, tensor<8x32xbf16> -> tensor<16x32xf32>, tensor<32xf32>
// CHECK: %[[R:.*]] = whale.cast %arg3 : tensor<8x32xf32> to tensor<8x32xbf16>
// CHECK: whale.matmul_grad %arg0, %arg2, %[[R]] operand = 1
// CHECK: whale.binary_grad add %arg4, %arg5, %arg3 operand = 1
// CHECK: return %[[DW]], %[[DB]]
func.func @amp_weight_grad(%x: tensor<8x16xbf16>, %dyb: tensor<8x32xbf16>, %w: tensor<16x32xbf16>, %dyf: tensor<8x32xf32>, %z: tensor<8x32xf32>, %b: tensor<32xf32>) -> (tensor<16x32xf32>, tensor<32xf32>, tensor<16x32xf32>, tensor<32xf32>) {
  %dw = whale.matmul_grad %x, %w, %dyb operand = 1 : tensor<8x16xbf16>, tensor<16x32xbf16>, tensor<8x32xbf16> -> tensor<16x32xf32>
  %wide = whale.cast %dyb : tensor<8x32xbf16> to tensor<8x32xf32>
  %db = whale.binary_grad add %z, %b, %wide operand = 1 : tensor<8x32xf32>, tensor<32xf32>, tensor<8x32xf32> -> tensor<32xf32>
  %r = whale.cast %dyf : tensor<8x32xf32> to tensor<8x32xbf16>
  %dw2 = whale.matmul_grad %x, %w, %r operand = 1 : tensor<8x16xbf16>, tensor<16x32xbf16>, tensor<8x32xbf16> -> tensor<16x32xf32>
  %db2 = whale.binary_grad add %z, %b, %dyf operand = 1 : tensor<8x32xf32>, tensor<32xf32>, tensor<8x32xf32> -> tensor<32xf32>
  return %dw, %db, %dw2, %db2 : tensor<16x32xf32>, tensor<32xf32>, tensor<16x32xf32>, tensor<32xf32>
}
