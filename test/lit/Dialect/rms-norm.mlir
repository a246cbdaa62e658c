// RUN: whale-opt %s | whale-opt | FileCheck %s
// RMSNorm (Llama's) and its gradient round-trip.

// CHECK-LABEL: func.func @rms
// CHECK: whale.rms_norm %{{.*}}, %{{.*}} eps = 9.9999999999999995E-7 : tensor<2x8x16xf32>, tensor<16xf32>
// CHECK: %{{.*}}, %{{.*}} = whale.rms_norm_grad %{{.*}}, %{{.*}}, %{{.*}} eps = 9.9999999999999995E-7 : tensor<2x8x16xf32>, tensor<16xf32>
func.func @rms(%x: tensor<2x8x16xf32>, %w: tensor<16xf32>, %dy: tensor<2x8x16xf32>) -> (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<16xf32>) {
  %y = whale.rms_norm %x, %w eps = 1.0e-6 : tensor<2x8x16xf32>, tensor<16xf32>
  %dx, %dw = whale.rms_norm_grad %x, %w, %dy eps = 1.0e-6 : tensor<2x8x16xf32>, tensor<16xf32>
  return %y, %dx, %dw : tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<16xf32>
}

// With the residual's gradient added (`plus`).
// CHECK-LABEL: func.func @rms_plus
// CHECK: whale.rms_norm_grad %{{.*}}, %{{.*}}, %{{.*}} plus %{{.*}} eps = 9.9999999999999995E-7 : tensor<2x8x16xf32>, tensor<16xf32>, tensor<2x8x16xf32>
func.func @rms_plus(%x: tensor<2x8x16xf32>, %w: tensor<16xf32>, %dy: tensor<2x8x16xf32>, %r: tensor<2x8x16xf32>) -> (tensor<2x8x16xf32>, tensor<16xf32>) {
  %dx, %dw = whale.rms_norm_grad %x, %w, %dy plus %r eps = 1.0e-6 : tensor<2x8x16xf32>, tensor<16xf32>, tensor<2x8x16xf32>
  return %dx, %dw : tensor<2x8x16xf32>, tensor<16xf32>
}
