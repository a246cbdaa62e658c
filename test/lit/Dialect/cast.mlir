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
