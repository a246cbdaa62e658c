// RUN: whale-opt %s --whale-autodiff | FileCheck %s

// amp's pattern: an f32 parameter read through a bf16 copy. The gradient
// of a cast is the cast back, so the parameter's gradient is f32 while
// the product's stays bf16.
// CHECK-LABEL: func.func @amp_grad
// CHECK-SAME: -> (tensor<f32>, tensor<3x2xf32>)
// CHECK: %[[XB:.*]] = whale.cast %{{.*}} : tensor<4x3xf32> to tensor<4x3xbf16>
// CHECK: %[[WB:.*]] = whale.cast %{{.*}} : tensor<3x2xf32> to tensor<3x2xbf16>
// CHECK: %[[DYF:.*]] = whale.reduce_grad mean
// CHECK: %[[DY:.*]] = whale.cast %[[DYF]] : tensor<4x2xf32> to tensor<4x2xbf16>
// CHECK: %[[DWB:.*]] = whale.matmul_grad %[[XB]], %[[WB]], %[[DY]] operand = 1 : {{.*}} -> tensor<3x2xbf16>
// CHECK: %[[DW:.*]] = whale.cast %[[DWB]] : tensor<3x2xbf16> to tensor<3x2xf32>
// CHECK: return %{{.*}}, %[[DW]]
func.func @amp(%x: tensor<4x3xf32>) -> tensor<f32> attributes {whale.model} {
  %w = whale.param "w" normal [0.0, 0.02] : tensor<3x2xf32>
  %xb = whale.cast %x : tensor<4x3xf32> to tensor<4x3xbf16>
  %wb = whale.cast %w : tensor<3x2xf32> to tensor<3x2xbf16>
  %y = whale.matmul %xb, %wb : tensor<4x3xbf16>, tensor<3x2xbf16> -> tensor<4x2xbf16>
  %yf = whale.cast %y : tensor<4x2xbf16> to tensor<4x2xf32>
  %m = whale.reduce_mean %yf axes = [0, 1] : tensor<4x2xf32> -> tensor<f32>
  return %m : tensor<f32>
}
