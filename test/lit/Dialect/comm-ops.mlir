// RUN: whale-opt %s | whale-opt | FileCheck %s

// CHECK-LABEL: func.func @exchange
// CHECK: whale.send %{{.*}} to stage 1 tag 3 : tensor<8x16xf32>
// CHECK: whale.recv from stage 1 tag 4 : tensor<8x16xi32>
// CHECK: whale.all_reduce %{{.*}}, %{{.*}} over "replicas" : tensor<16x4xf32>, tensor<4xf32> -> tensor<16x4xf32>, tensor<4xf32>
// CHECK: whale.clip_grad_norm %{{.*}} max_norm = 1.000000e+00 over "stages"
func.func @exchange(%h: tensor<8x16xf32>, %a: tensor<16x4xf32>, %b: tensor<4xf32>) -> (tensor<8x16xi32>, tensor<16x4xf32>, tensor<4xf32>) {
  whale.send %h to stage 1 tag 3 : tensor<8x16xf32>
  %r = whale.recv from stage 1 tag 4 : tensor<8x16xi32>
  %s:2 = whale.all_reduce %a, %b over "replicas" : tensor<16x4xf32>, tensor<4xf32> -> tensor<16x4xf32>, tensor<4xf32>
  %c:2 = whale.clip_grad_norm %s#0, %s#1 max_norm = 1.0 over "stages" : tensor<16x4xf32>, tensor<4xf32> -> tensor<16x4xf32>, tensor<4xf32>
  return %r, %c#0, %c#1 : tensor<8x16xi32>, tensor<16x4xf32>, tensor<4xf32>
}
