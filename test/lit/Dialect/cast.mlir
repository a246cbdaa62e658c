// RUN: whale-opt %s | whale-opt | FileCheck %s

// amp's storage: conversions between f32 and bf16, either way.
// CHECK-LABEL: func.func @both_ways
// CHECK: %[[H:.*]] = whale.cast %{{.*}} : tensor<8x16xf32> to tensor<8x16xbf16>
// CHECK: whale.cast %[[H]] : tensor<8x16xbf16> to tensor<8x16xf32>
// CHECK: whale.cast %{{.*}} : tensor<f32> to tensor<bf16>
func.func @both_ways(%x: tensor<8x16xf32>, %s: tensor<f32>) {
  %h = whale.cast %x : tensor<8x16xf32> to tensor<8x16xbf16>
  %f = whale.cast %h : tensor<8x16xbf16> to tensor<8x16xf32>
  %t = whale.cast %s : tensor<f32> to tensor<bf16>
  return
}

// An activation gradient rounded for its GEMMs with its bias's gradient
// summed from the f32 values: one op, two results.
// CHECK-LABEL: func.func @round_and_sum
// CHECK: %{{.*}}, %{{.*}} = whale.round_and_sum %{{.*}} : tensor<2x8x32xf32> -> tensor<2x8x32xbf16>, tensor<32xf32>
// CHECK: whale.round_and_sum %{{.*}} : tensor<2x8x32xf32> -> tensor<2x8x32xbf16>, tensor<8x32xf32>
func.func @round_and_sum(%dy: tensor<2x8x32xf32>) {
  %r, %s = whale.round_and_sum %dy : tensor<2x8x32xf32> -> tensor<2x8x32xbf16>, tensor<32xf32>
  %r2, %s2 = whale.round_and_sum %dy : tensor<2x8x32xf32> -> tensor<2x8x32xbf16>, tensor<8x32xf32>
  return
}

// The loss's gradient rounded and summed as it is computed, on logits
// stored in bf16 or f32.
// CHECK-LABEL: func.func @rounded_loss_grad
// CHECK: %{{.*}}, %{{.*}} = whale.rounded_cross_entropy_grad %{{.*}}, %{{.*}}, %{{.*}} : tensor<2x8x100xbf16>, tensor<2x8xi32>, tensor<2x8xf32> -> tensor<2x8x100xbf16>, tensor<100xf32>
// CHECK: whale.rounded_cross_entropy_grad %{{.*}}, %{{.*}}, %{{.*}} : tensor<8x100xf32>, tensor<8xi64>, tensor<8xf32> -> tensor<8x100xbf16>, tensor<100xf32>
func.func @rounded_loss_grad(%l: tensor<2x8x100xbf16>, %y: tensor<2x8xi32>, %d: tensor<2x8xf32>, %lf: tensor<8x100xf32>, %yl: tensor<8xi64>, %df: tensor<8xf32>) {
  %g, %db = whale.rounded_cross_entropy_grad %l, %y, %d : tensor<2x8x100xbf16>, tensor<2x8xi32>, tensor<2x8xf32> -> tensor<2x8x100xbf16>, tensor<100xf32>
  %g2, %db2 = whale.rounded_cross_entropy_grad %lf, %yl, %df : tensor<8x100xf32>, tensor<8xi64>, tensor<8xf32> -> tensor<8x100xbf16>, tensor<100xf32>
  return
}
