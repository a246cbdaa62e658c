// RUN: whale-opt %s | whale-opt | FileCheck %s
// RUN: whale-opt %s --mlir-print-op-generic | whale-opt | FileCheck %s

// CHECK-LABEL: func.func @topk
// CHECK: whale.topk %{{.*}} k = 2 : tensor<16x8xf32> -> tensor<16x2xf32>
// CHECK: whale.topk %{{.*}} k = 2 indices : tensor<16x8xf32> -> tensor<16x2xi32>
// CHECK: whale.topk_grad %{{.*}}, %{{.*}} k = 2 : tensor<16x8xf32>, tensor<16x2xf32>
func.func @topk(%g: tensor<16x8xf32>) -> (tensor<16x2xi32>, tensor<16x8xf32>) {
  %v = whale.topk %g k = 2 : tensor<16x8xf32> -> tensor<16x2xf32>
  %i = whale.topk %g k = 2 indices : tensor<16x8xf32> -> tensor<16x2xi32>
  %d = whale.topk_grad %g, %v k = 2 : tensor<16x8xf32>, tensor<16x2xf32>
  return %i, %d : tensor<16x2xi32>, tensor<16x8xf32>
}
