// RUN: whale-opt %s --split-input-file --whale-virtual-devices=devices=2 --whale-pipeline=global-batch=32 '--whale-balance=local-batches=24,8 shard-weights=3,1 shard-weight=1' --whale-sharding | FileCheck %s

// Uneven shards: the group weighs its ranks 3:1, so every split dimension
// is cut in 4 units and this program, the weight-1 rank's, holds one of
// them: 8 of w1's 32 columns, 8 of w2's 32 rows, and 8 of the group's 32
// rows (the other rank computes 24). Its parameters record the whole's
// extent; every shard op carries the weights so the runtime finds each
// part's place. The loss is the mean of 32 rows, 4 times this rank's.
// CHECK-LABEL: func.func @mlp
// CHECK-SAME: loss_scale = 4.000000e+00 : f64
// CHECK-SAME: micro_batch = 8 : i64
// CHECK-SAME: shard_weight = 1 : i64, shard_weights = array<i64: 3, 1>
// CHECK: whale.param "w1" {{.*}}{shard = array<i64: 1, 2, 32>, shard_weights = array<i64: 3, 1>} : tensor<16x8xf32>
// CHECK: whale.all_gather %arg0 axis 0 shards 2 {weights = array<i64: 3, 1>} : tensor<8x16xf32> -> tensor<32x16xf32>
// CHECK: whale.matmul {{.*}} -> tensor<32x8xf32>
// CHECK: whale.param "w2" {{.*}}{shard = array<i64: 0, 2, 32>, shard_weights = array<i64: 3, 1>} : tensor<8x16xf32>
// CHECK: whale.shard_sum {{.*}} shards 2 : tensor<32x16xf32>
// CHECK: whale.all_gather %arg1 axis 0 shards 2 {weights = array<i64: 3, 1>} : tensor<8xi32> -> tensor<32xi32>
func.func @mlp(%x: tensor<8x16xf32>, %y: tensor<8xi32>) -> tensor<f32> attributes {whale.model} {
  %l = whale.taskgraph split -> (tensor<f32>) {
    %w1 = whale.param "w1" normal [0.0, 2.0e-02] : tensor<16x32xf32>
    %h = whale.matmul %x, %w1 : tensor<8x16xf32>, tensor<16x32xf32> -> tensor<8x32xf32>
    %r = whale.relu %h : tensor<8x32xf32>
    %w2 = whale.param "w2" normal [0.0, 2.0e-02] : tensor<32x16xf32>
    %z = whale.matmul %r, %w2 : tensor<8x32xf32>, tensor<32x16xf32> -> tensor<8x16xf32>
    %c = whale.cross_entropy %z, %y : tensor<8x16xf32>, tensor<8xi32> -> tensor<8xf32>
    %m = whale.reduce_mean %c axes = [0] : tensor<8xf32> -> tensor<f32>
    whale.yield %m : tensor<f32>
  }
  return %l : tensor<f32>
}

// -----

// A mean over a split axis is this rank's share of the whole's: its part
// holds 1 of 4 units, so its mean counts a quarter before the group sums.
// CHECK-LABEL: func.func @mean_of_parts
// CHECK: %[[M:.*]] = whale.reduce_mean {{.*}} axes = [0, 1] : tensor<32x8xf32> -> tensor<f32>
// CHECK: %[[Q:.*]] = whale.constant 2.500000e-01 : tensor<f32>
// CHECK: %[[S:.*]] = whale.mul %[[M]], %[[Q]]
// CHECK: whale.shard_sum %[[S]] shards 2 : tensor<f32>
func.func @mean_of_parts(%x: tensor<8x16xf32>) -> tensor<f32> attributes {whale.model} {
  %l = whale.taskgraph split -> (tensor<f32>) {
    %w = whale.param "w" normal [0.0, 2.0e-02] : tensor<16x32xf32>
    %h = whale.matmul %x, %w : tensor<8x16xf32>, tensor<16x32xf32> -> tensor<8x32xf32>
    %r = whale.relu %h : tensor<8x32xf32>
    %m = whale.reduce_mean %r axes = [0, 1] : tensor<8x32xf32> -> tensor<f32>
    whale.yield %m : tensor<f32>
  }
  return %l : tensor<f32>
}
