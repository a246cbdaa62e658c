// RUN: whale-opt %s --split-input-file --whale-virtual-devices=devices=2 --whale-pipeline=global-batch=4 --whale-sharding | FileCheck %s

// Expert parallelism: each rank routes its own sequences into its share of
// every expert's slots (part(1)), one all-to-all brings each rank the slots
// of the experts it keeps (part(0), the stacked weight sharded with them),
// and another takes the experts' outputs back to the ranks whose tokens
// they are.
// CHECK-LABEL: func.func @experts
// CHECK: whale.taskgraph split
// CHECK-SAME: bridges = ["all_to_all part(1) -> part(0) 512 B", "all_to_all part(0) -> part(1) 512 B", "shard_sum partial -> whole 4 B"]
// CHECK-SAME: pattern = "groups", result = "part(1)"
// CHECK-SAME: pattern = "batch", result = "part(0)"
// CHECK-SAME: pattern = "groups", result = "part(0)"
// CHECK: %[[S:.*]] = whale.moe_dispatch %arg0, %arg1 experts = 4 capacity = 2 : tensor<2x4x8xf32>, tensor<2x4x2xi32> -> tensor<4x4x8xf32>
// CHECK: %[[T:.*]] = whale.all_to_all %[[S]] split 0 concat 1 shards 2 : tensor<4x4x8xf32> -> tensor<2x8x8xf32>
// CHECK: %[[W:.*]] = whale.param "experts" {{.*}}{shard = array<i64: 0, 2>} : tensor<2x8x8xf32>
// CHECK: %[[H:.*]] = whale.matmul %[[T]], %[[W]] : tensor<2x8x8xf32>, tensor<2x8x8xf32> -> tensor<2x8x8xf32>
// CHECK: %[[B:.*]] = whale.all_to_all %[[H]] split 1 concat 0 shards 2 : tensor<2x8x8xf32> -> tensor<4x4x8xf32>
// CHECK: whale.moe_combine %[[B]], %arg1, %arg2 : tensor<4x4x8xf32>, tensor<2x4x2xi32>, tensor<2x4x2xf32> -> tensor<2x4x8xf32>
func.func @experts(%x: tensor<2x4x8xf32>, %e: tensor<2x4x2xi32>, %g: tensor<2x4x2xf32>) -> tensor<f32> attributes {whale.model} {
  %l = whale.taskgraph split -> (tensor<f32>) {
    %s = whale.moe_dispatch %x, %e experts = 4 capacity = 2 : tensor<2x4x8xf32>, tensor<2x4x2xi32> -> tensor<4x4x8xf32>
    %w = whale.param "experts" normal [0.0, 2.0e-02] : tensor<4x8x8xf32>
    %h = whale.matmul %s, %w : tensor<4x4x8xf32>, tensor<4x8x8xf32> -> tensor<4x4x8xf32>
    %y = whale.moe_combine %h, %e, %g : tensor<4x4x8xf32>, tensor<2x4x2xi32>, tensor<2x4x2xf32> -> tensor<2x4x8xf32>
    %m = whale.reduce_mean %y axes = [0, 1, 2] : tensor<2x4x8xf32> -> tensor<f32>
    whale.yield %m : tensor<f32>
  }
  return %l : tensor<f32>
}

// -----

// A router's choices follow the rows: softmax, top-k and one_hot each run
// on the rank's own sequences.
// CHECK-LABEL: func.func @router
// CHECK-NOT: whale.all_gather
// CHECK: whale.topk %{{.*}} k = 1 indices : tensor<2x4x4xf32> -> tensor<2x4x1xi32>
// CHECK: whale.one_hot %{{.*}} classes = 4 : tensor<2x4x1xi32> -> tensor<2x4x1x4xf32>
func.func @router(%x: tensor<2x4x4xf32>) -> tensor<f32> attributes {whale.model} {
  %l = whale.taskgraph split -> (tensor<f32>) {
    %p = whale.softmax %x axis = 2 : tensor<2x4x4xf32>
    %i = whale.topk %p k = 1 indices : tensor<2x4x4xf32> -> tensor<2x4x1xi32>
    %h = whale.one_hot %i classes = 4 : tensor<2x4x1xi32> -> tensor<2x4x1x4xf32>
    %m = whale.reduce_mean %h axes = [0, 1, 2, 3] : tensor<2x4x1x4xf32> -> tensor<f32>
    whale.yield %m : tensor<f32>
  }
  return %l : tensor<f32>
}
