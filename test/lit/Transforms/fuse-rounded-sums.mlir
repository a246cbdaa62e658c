// RUN: whale-opt %s -split-input-file -whale-fuse-rounded-sums | FileCheck %s

// amp's storage: an activation gradient rounded for its GEMMs and summed
// for its bias's gradient, one op where the rounding stood; the gradient
// itself stays for its other readers.
// CHECK-LABEL: func.func @projection
// CHECK: %[[R:.*]], %[[S:.*]] = whale.round_and_sum %arg0 : tensor<2x8x32xf32> -> tensor<2x8x32xbf16>, tensor<32xf32>
// CHECK-NEXT: whale.matmul_grad %arg1, %arg2, %[[R]] operand = 0
// CHECK-NEXT: whale.matmul_grad %arg1, %arg2, %[[R]] operand = 1
// CHECK-NOT: whale.cast
// CHECK-NOT: whale.binary_grad
// CHECK: return %{{.*}}, %{{.*}}, %[[S]], %arg0
func.func @projection(%dy: tensor<2x8x32xf32>, %x: tensor<2x8x16xbf16>, %w: tensor<16x32xbf16>, %b: tensor<32xf32>) -> (tensor<2x8x16xf32>, tensor<16x32xf32>, tensor<32xf32>, tensor<2x8x32xf32>) {
  %r = whale.cast %dy : tensor<2x8x32xf32> to tensor<2x8x32xbf16>
  %dx = whale.matmul_grad %x, %w, %r operand = 0 : tensor<2x8x16xbf16>, tensor<16x32xbf16>, tensor<2x8x32xbf16> -> tensor<2x8x16xf32>
  %dw = whale.matmul_grad %x, %w, %r operand = 1 : tensor<2x8x16xbf16>, tensor<16x32xbf16>, tensor<2x8x32xbf16> -> tensor<16x32xf32>
  %db = whale.binary_grad add %dy, %b, %dy operand = 1 : tensor<2x8x32xf32>, tensor<32xf32>, tensor<2x8x32xf32> -> tensor<32xf32>
  return %dx, %dw, %db, %dy : tensor<2x8x16xf32>, tensor<16x32xf32>, tensor<32xf32>, tensor<2x8x32xf32>
}

// -----

// The bias's gradient first (a plan may schedule it so): the op stands
// there, and the bias may be the sum's left operand.
// CHECK-LABEL: func.func @sum_first
// CHECK-NEXT: %[[R:.*]], %[[S:.*]] = whale.round_and_sum %arg0 : tensor<8x32xf32> -> tensor<8x32xbf16>, tensor<32xf32>
// CHECK-NEXT: whale.neg %[[S]]
// CHECK-NEXT: return %[[R]]
func.func @sum_first(%dy: tensor<8x32xf32>, %b: tensor<32xf32>) -> (tensor<8x32xbf16>, tensor<32xf32>) {
  %db = whale.binary_grad add %b, %dy, %dy operand = 0 : tensor<32xf32>, tensor<8x32xf32>, tensor<8x32xf32> -> tensor<32xf32>
  %n = whale.neg %db : tensor<32xf32>
  %r = whale.cast %dy : tensor<8x32xf32> to tensor<8x32xbf16>
  return %r, %n : tensor<8x32xbf16>, tensor<32xf32>
}

// -----

// A sum over the first dimension alone (a bias of [8, 32]).
// CHECK-LABEL: func.func @table_bias
// CHECK: whale.round_and_sum %arg0 : tensor<2x8x32xf32> -> tensor<2x8x32xbf16>, tensor<8x32xf32>
func.func @table_bias(%dy: tensor<2x8x32xf32>, %b: tensor<8x32xf32>) -> (tensor<2x8x32xbf16>, tensor<8x32xf32>) {
  %r = whale.cast %dy : tensor<2x8x32xf32> to tensor<2x8x32xbf16>
  %db = whale.binary_grad add %dy, %b, %dy operand = 1 : tensor<2x8x32xf32>, tensor<8x32xf32>, tensor<2x8x32xf32> -> tensor<8x32xf32>
  return %r, %db : tensor<2x8x32xbf16>, tensor<8x32xf32>
}

// -----

// Left alone: a rounding without a bias sum, a widening, a difference's
// gradient (its right side negates), a sum of another value, and a
// gradient of dout's own shape (nothing summed).
// CHECK-LABEL: func.func @apart
// CHECK-NOT: whale.round_and_sum
// CHECK-COUNT-2: whale.cast
// CHECK-COUNT-3: whale.binary_grad
// CHECK-NOT: whale.round_and_sum
func.func @apart(%dy: tensor<8x32xf32>, %h: tensor<8x32xbf16>, %other: tensor<8x32xf32>, %b: tensor<32xf32>, %c: tensor<8x32xf32>) -> (tensor<8x32xbf16>, tensor<8x32xf32>, tensor<32xf32>, tensor<32xf32>, tensor<8x32xf32>) {
  %r = whale.cast %dy : tensor<8x32xf32> to tensor<8x32xbf16>
  %w = whale.cast %h : tensor<8x32xbf16> to tensor<8x32xf32>
  %d1 = whale.binary_grad sub %dy, %b, %dy operand = 1 : tensor<8x32xf32>, tensor<32xf32>, tensor<8x32xf32> -> tensor<32xf32>
  %d2 = whale.binary_grad add %other, %b, %other operand = 1 : tensor<8x32xf32>, tensor<32xf32>, tensor<8x32xf32> -> tensor<32xf32>
  %d3 = whale.binary_grad add %dy, %c, %dy operand = 1 : tensor<8x32xf32>, tensor<8x32xf32>, tensor<8x32xf32> -> tensor<8x32xf32>
  return %r, %w, %d1, %d2, %d3 : tensor<8x32xbf16>, tensor<8x32xf32>, tensor<32xf32>, tensor<32xf32>, tensor<8x32xf32>
}

// -----

// The LM head's gradient: the loss's gradient, read only by its rounding
// and the head bias's sum, is made rounded and summed where it stood; the
// f32 gradient is gone.
// CHECK-LABEL: func.func @loss
// CHECK-NEXT: %[[G:.*]], %[[S:.*]] = whale.rounded_cross_entropy_grad %arg0, %arg1, %arg2 : tensor<2x8x100xbf16>, tensor<2x8xi32>, tensor<2x8xf32> -> tensor<2x8x100xbf16>, tensor<100xf32>
// CHECK-NEXT: whale.matmul_grad %arg3, %arg4, %[[G]] operand = 1
// CHECK-NEXT: return %{{.*}}, %[[S]]
func.func @loss(%logits: tensor<2x8x100xbf16>, %y: tensor<2x8xi32>, %dloss: tensor<2x8xf32>, %h: tensor<2x8x16xbf16>, %w: tensor<16x100xbf16>, %b: tensor<100xf32>) -> (tensor<16x100xf32>, tensor<100xf32>) {
  %g = whale.cross_entropy_grad %logits, %y, %dloss : tensor<2x8x100xbf16>, tensor<2x8xi32>, tensor<2x8xf32> -> f32
  %r = whale.cast %g : tensor<2x8x100xf32> to tensor<2x8x100xbf16>
  %dw = whale.matmul_grad %h, %w, %r operand = 1 : tensor<2x8x16xbf16>, tensor<16x100xbf16>, tensor<2x8x100xbf16> -> tensor<16x100xf32>
  %db = whale.binary_grad add %g, %b, %g operand = 1 : tensor<2x8x100xf32>, tensor<100xf32>, tensor<2x8x100xf32> -> tensor<100xf32>
  return %dw, %db : tensor<16x100xf32>, tensor<100xf32>
}

// -----

// A loss's gradient something else reads too stays, and is rounded and
// summed by round_and_sum.
// CHECK-LABEL: func.func @loss_read_again
// CHECK: %[[G:.*]] = whale.cross_entropy_grad
// CHECK-NEXT: whale.round_and_sum %[[G]]
// CHECK-NOT: whale.rounded_cross_entropy_grad
func.func @loss_read_again(%logits: tensor<8x100xbf16>, %y: tensor<8xi32>, %dloss: tensor<8xf32>, %b: tensor<100xf32>) -> (tensor<8x100xbf16>, tensor<100xf32>, tensor<8x100xf32>) {
  %g = whale.cross_entropy_grad %logits, %y, %dloss : tensor<8x100xbf16>, tensor<8xi32>, tensor<8xf32> -> f32
  %r = whale.cast %g : tensor<8x100xf32> to tensor<8x100xbf16>
  %db = whale.binary_grad add %g, %b, %g operand = 1 : tensor<8x100xf32>, tensor<100xf32>, tensor<8x100xf32> -> tensor<100xf32>
  return %r, %db, %g : tensor<8x100xbf16>, tensor<100xf32>, tensor<8x100xf32>
}
