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
