// RUN: whale-opt %s -split-input-file --whale-widen-bf16 | FileCheck %s

// A matmul whose result only reaches fp32 readers, through reshapes, stores
// it in fp32; the reshapes move fp32, and the tanh's rounded result, widened
// again by its only reader, stays fp32. Nothing is converted.
// CHECK-LABEL: func.func @through_reshapes(
// CHECK-NOT: whale.cast
// CHECK: whale.matmul %{{.*}}, %{{.*}} : tensor<4x8xbf16>, tensor<8x8xbf16> -> tensor<4x8xf32>
// CHECK-NEXT: whale.reshape %{{.*}} : tensor<4x8xf32> -> tensor<2x16xf32>
// CHECK-NEXT: whale.reshape %{{.*}} : tensor<2x16xf32> -> tensor<2x2x8xf32>
// CHECK-NEXT: %[[T:.*]] = whale.tanh %{{.*}} : tensor<2x2x8xf32>
// CHECK-NEXT: return %[[T]]
func.func @through_reshapes(%a: tensor<4x8xbf16>, %b: tensor<8x8xbf16>) -> tensor<2x2x8xf32> {
  %m = whale.matmul %a, %b : tensor<4x8xbf16>, tensor<8x8xbf16> -> tensor<4x8xbf16>
  %r = whale.reshape %m : tensor<4x8xbf16> -> tensor<2x16xbf16>
  %s = whale.reshape %r : tensor<2x16xbf16> -> tensor<2x2x8xbf16>
  %t = whale.tanh %s : tensor<2x2x8xbf16>
  %w = whale.cast %t : tensor<2x2x8xbf16> to tensor<2x2x8xf32>
  return %w : tensor<2x2x8xf32>
}

// -----

// A result another matmul reads stays bf16, and the tanh reading it too
// widens it; the tanh's result, read by a matmul, is rounded once.
// CHECK-LABEL: func.func @kept(
// CHECK: %[[M:.*]] = whale.matmul %{{.*}} : tensor<4x8xbf16>, tensor<8x8xbf16> -> tensor<4x8xbf16>
// CHECK-NEXT: %[[MW:.*]] = whale.cast %[[M]] : tensor<4x8xbf16> to tensor<4x8xf32>
// CHECK-NEXT: %[[T:.*]] = whale.tanh %[[MW]] : tensor<4x8xf32>
// CHECK-NEXT: %[[TB:.*]] = whale.cast %[[T]] : tensor<4x8xf32> to tensor<4x8xbf16>
// CHECK-NEXT: whale.matmul %[[TB]], %[[M]] {transpose_rhs} : tensor<4x8xbf16>, tensor<4x8xbf16> -> tensor<4x4xbf16>
func.func @kept(%a: tensor<4x8xbf16>, %b: tensor<8x8xbf16>) -> tensor<4x4xbf16> {
  %m = whale.matmul %a, %b : tensor<4x8xbf16>, tensor<8x8xbf16> -> tensor<4x8xbf16>
  %t = whale.tanh %m : tensor<4x8xbf16>
  %p = whale.matmul %t, %m {transpose_rhs} : tensor<4x8xbf16>, tensor<4x8xbf16> -> tensor<4x4xbf16>
  return %p : tensor<4x4xbf16>
}

// -----

// A weight's gradient comes out of its GEMM in fp32 where the cast back to
// its fp32 master is its only reader.
// CHECK-LABEL: func.func @weight_grad(
// CHECK: %[[G:.*]] = whale.matmul_grad %{{.*}} operand = 1 : tensor<4x8xbf16>, tensor<8x8xbf16>, tensor<4x8xbf16> -> tensor<8x8xf32>
// CHECK-NEXT: return %[[G]]
func.func @weight_grad(%x: tensor<4x8xbf16>, %w: tensor<8x8xbf16>, %d: tensor<4x8xbf16>) -> tensor<8x8xf32> {
  %g = whale.matmul_grad %x, %w, %d operand = 1 : tensor<4x8xbf16>, tensor<8x8xbf16>, tensor<4x8xbf16> -> tensor<8x8xbf16>
  %f = whale.cast %g : tensor<8x8xbf16> to tensor<8x8xf32>
  return %f : tensor<8x8xf32>
}

// -----

// Attention runs on bf16 storage as it is: q, k and v read in bf16, the
// output stored in bf16. Its gradient reads the forward's operands and
// output so, but dout in fp32, and makes fp32 gradients: amp's dout (a
// gradient GEMM's bf16 result here) is widened, and each gradient rounded
// back for the bf16 reader amp's program gave it.
// CHECK-LABEL: func.func @attention(
// CHECK-NOT: whale.cast
// CHECK: %[[O:.*]] = whale.attention %arg0, %arg1, %arg2 scale = 1.250000e-01 causal : tensor<2x8x4xbf16>, tensor<2x8x4xbf16>
// CHECK: %[[DW:.*]] = whale.cast %arg3 : tensor<2x8x4xbf16> to tensor<2x8x4xf32>
// CHECK-NEXT: %[[DQ:.*]], %[[DK:.*]], %[[DV:.*]] = whale.attention_grad %arg0, %arg1, %arg2, %[[O]], %[[DW]] scale = 1.250000e-01 causal : tensor<2x8x4xbf16>, tensor<2x8x4xbf16> -> f32
// CHECK-NEXT: whale.cast %[[DQ]] : tensor<2x8x4xf32> to tensor<2x8x4xbf16>
// CHECK-NEXT: whale.cast %[[DK]] : tensor<2x8x4xf32> to tensor<2x8x4xbf16>
// CHECK-NEXT: whale.cast %[[DV]] : tensor<2x8x4xf32> to tensor<2x8x4xbf16>
func.func @attention(%q: tensor<2x8x4xbf16>, %k: tensor<2x8x4xbf16>, %v: tensor<2x8x4xbf16>, %d: tensor<2x8x4xbf16>) -> (tensor<2x8x4xbf16>, tensor<2x8x4xbf16>, tensor<2x8x4xbf16>, tensor<2x8x4xbf16>) {
  %o = whale.attention %q, %k, %v scale = 0.125 causal : tensor<2x8x4xbf16>, tensor<2x8x4xbf16>
  %dq, %dk, %dv = whale.attention_grad %q, %k, %v, %o, %d scale = 0.125 causal : tensor<2x8x4xbf16>, tensor<2x8x4xbf16>
  return %o, %dq, %dk, %dv : tensor<2x8x4xbf16>, tensor<2x8x4xbf16>, tensor<2x8x4xbf16>, tensor<2x8x4xbf16>
}

// -----

// Cross entropy and its gradient read the logits as they are stored, in
// bf16 (the widening amp's storage made for the fp32 loss goes), and
// compute in fp32: the loss and the logits' gradient stay f32.
// CHECK-LABEL: func.func @stored_logits(
// CHECK-NOT: whale.cast
// CHECK: %[[L:.*]] = whale.cross_entropy %arg0, %arg1 : tensor<4x16xbf16>, tensor<4xi32> -> tensor<4xf32>
// CHECK-NEXT: %[[G:.*]] = whale.cross_entropy_grad %arg0, %arg1, %arg2 : tensor<4x16xbf16>, tensor<4xi32>, tensor<4xf32> -> f32
// CHECK-NEXT: whale.cast %[[G]] : tensor<4x16xf32> to tensor<4x16xbf16>
func.func @stored_logits(%logits: tensor<4x16xbf16>, %y: tensor<4xi32>, %dl: tensor<4xf32>) -> (tensor<4xf32>, tensor<4x16xbf16>) {
  %w = whale.cast %logits : tensor<4x16xbf16> to tensor<4x16xf32>
  %l = whale.cross_entropy %w, %y : tensor<4x16xf32>, tensor<4xi32> -> tensor<4xf32>
  %g = whale.cross_entropy_grad %w, %y, %dl : tensor<4x16xf32>, tensor<4xi32>, tensor<4xf32>
  %r = whale.cast %g : tensor<4x16xf32> to tensor<4x16xbf16>
  return %l, %r : tensor<4xf32>, tensor<4x16xbf16>
}
