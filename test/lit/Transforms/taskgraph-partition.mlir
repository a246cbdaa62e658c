// RUN: whale-opt %s --whale-taskgraph-partition | FileCheck %s
// RUN: whale-opt %s --whale-taskgraph-partition=auto-parallel=true\ num-task-graph=2 | FileCheck %s --check-prefix=AUTO

// Ops outside any block join a TaskGraph of the default strategy; a value
// used after it leaves through the yield.
// CHECK-LABEL: func.func @loose
// CHECK: %[[T:.*]] = whale.taskgraph replicate -> (tensor<8x8xf32>)
// CHECK-NEXT: whale.param "m/w"
// CHECK-NEXT: whale.matmul
// CHECK-NEXT: whale.yield
// CHECK: whale.taskgraph replicate(2)
// CHECK: whale.relu %[[T]]
// CHECK: whale.taskgraph replicate -> (tensor<f32>)
// CHECK-NEXT: whale.reduce_mean
// By FLOPs: the 8x4x8 product (512) against relu (64), mean (65): the first
// cut comes right after the product; parameters go with their first user.
// AUTO-LABEL: func.func @loose
// AUTO: whale.taskgraph replicate -> (tensor<8x8xf32>)
// AUTO-NEXT: whale.param "m/w"
// AUTO-NEXT: whale.matmul
// AUTO-NEXT: whale.yield
// AUTO: whale.taskgraph replicate -> (tensor<f32>)
// AUTO-NEXT: whale.relu
// AUTO-NEXT: whale.reduce_mean
// AUTO-NOT: whale.taskgraph
func.func @loose(%x: tensor<8x4xf32>) -> tensor<f32> attributes {whale.model} {
  %w = whale.param "m/w" normal [0.0, 0.1] : tensor<4x8xf32>
  %h = whale.matmul %x, %w : tensor<8x4xf32>, tensor<4x8xf32> -> tensor<8x8xf32>
  %r = whale.taskgraph replicate(2) -> (tensor<8x8xf32>) {
    %a = whale.relu %h : tensor<8x8xf32>
    whale.yield %a : tensor<8x8xf32>
  }
  %l = whale.reduce_mean %r axes = [0, 1] : tensor<8x8xf32> -> tensor<f32>
  return %l : tensor<f32>
}

// Two parameters with one first user (a layernorm's scale and shift) both
// go right before it, each once (they used to trade places forever).
// (relu 32 FLOPs and layernorm 256 against mean 33: one cut, after the
// layernorm.)
// AUTO-LABEL: func.func @shared_user
// AUTO: whale.taskgraph
// AUTO-NEXT: whale.relu
// AUTO-NEXT: whale.param "m/g"
// AUTO-NEXT: whale.param "m/b"
// AUTO-NEXT: whale.layernorm
// AUTO: whale.taskgraph
// AUTO-NEXT: whale.reduce_mean
func.func @shared_user(%x: tensor<8x4xf32>) -> tensor<f32> attributes {whale.model} {
  %g = whale.param "m/g" ones [] : tensor<4xf32>
  %b = whale.param "m/b" zeros [] : tensor<4xf32>
  %r = whale.relu %x : tensor<8x4xf32>
  %n = whale.layernorm %r, %g, %b eps = 1.0e-5 : tensor<8x4xf32>, tensor<4xf32>, tensor<4xf32>
  %l = whale.reduce_mean %n axes = [0, 1] : tensor<8x4xf32> -> tensor<f32>
  return %l : tensor<f32>
}
