// RUN: whale-opt %s | whale-opt | FileCheck %s
// RUN: whale-opt %s --split-input-file --verify-diagnostics --whale-annotate-cost >/dev/null

// CHECK-LABEL: func.func @round_trip
// CHECK: whale.all_gather %{{.*}} axis 0 shards 4 : tensor<2x16xf32> -> tensor<8x16xf32>
// CHECK: whale.shard_slice %{{.*}} axis 1 shards 4 : tensor<8x16xf32> -> tensor<8x4xf32>
// CHECK: whale.shard_sum %{{.*}} shards 4 : tensor<8x4xf32>
// CHECK: whale.fanout %{{.*}} shards 4 : tensor<8x16xf32>
// CHECK: whale.sharded_cross_entropy %{{.*}}, %{{.*}} shards 4 : tensor<8x4xf32>, tensor<8xi32> -> tensor<8xf32>
// CHECK: whale.sharded_cross_entropy_grad %{{.*}}, %{{.*}}, %{{.*}} shards 4
// CHECK: whale.param "w" normal [0.000000e+00, 2.000000e-02] {shard = array<i64: 1, 4>} : tensor<16x4xf32>
// CHECK: whale.all_to_all %{{.*}} split 0 concat 1 shards 2 : tensor<4x10x8xf32> -> tensor<2x20x8xf32>
// CHECK: whale.shard_slice %{{.*}} axis 1 shards 4 parts 2 : tensor<2x2x16x8xf32> -> tensor<2x1x16x8xf32>
// CHECK-LABEL: func.func @uneven_round_trip
// CHECK: whale.all_gather %{{.*}} axis 1 shards 2 {weights = array<i64: 3, 1>} : tensor<8x12xf32> -> tensor<8x16xf32>
// CHECK: whale.shard_slice %{{.*}} axis 1 shards 2 {weights = array<i64: 3, 1>} : tensor<8x16xf32> -> tensor<8x4xf32>
// CHECK: whale.sharded_cross_entropy %{{.*}}, %{{.*}} shards 2 {weights = array<i64: 3, 1>}
// CHECK: whale.param "w" zeros [] {shard = array<i64: 1, 2, 16>, shard_weights = array<i64: 3, 1>} : tensor<8x12xf32>
// CHECK: whale.all_to_all %{{.*}} split 0 concat 1 shards 2 {weights = array<i64: 3, 1>} : tensor<4x6x8xf32> -> tensor<3x8x8xf32>
func.func @round_trip(%p: tensor<2x16xf32>, %y: tensor<8xi32>, %d: tensor<8xf32>, %slots: tensor<4x10x8xf32>) {
  %x = whale.all_gather %p axis 0 shards 4 : tensor<2x16xf32> -> tensor<8x16xf32>
  %s = whale.shard_slice %x axis 1 shards 4 : tensor<8x16xf32> -> tensor<8x4xf32>
  %t = whale.shard_sum %s shards 4 : tensor<8x4xf32>
  %f = whale.fanout %x shards 4 : tensor<8x16xf32>
  %l = whale.sharded_cross_entropy %t, %y shards 4 : tensor<8x4xf32>, tensor<8xi32> -> tensor<8xf32>
  %g = whale.sharded_cross_entropy_grad %t, %y, %d shards 4 : tensor<8x4xf32>, tensor<8xi32>, tensor<8xf32>
  %w = whale.param "w" normal [0.0, 2.0e-02] {shard = array<i64: 1, 4>} : tensor<16x4xf32>
  %e = whale.all_to_all %slots split 0 concat 1 shards 2 : tensor<4x10x8xf32> -> tensor<2x20x8xf32>
  %kv = whale.constant 1.0 : tensor<2x2x16x8xf32>
  %k = whale.shard_slice %kv axis 1 shards 4 parts 2 : tensor<2x2x16x8xf32> -> tensor<2x1x16x8xf32>
  return
}

func.func @uneven_round_trip(%p: tensor<8x12xf32>, %y: tensor<8xi32>, %slots: tensor<4x6x8xf32>) {
  %x = whale.all_gather %p axis 1 shards 2 {weights = array<i64: 3, 1>} : tensor<8x12xf32> -> tensor<8x16xf32>
  %s = whale.shard_slice %x axis 1 shards 2 {weights = array<i64: 3, 1>} : tensor<8x16xf32> -> tensor<8x4xf32>
  %l = whale.sharded_cross_entropy %s, %y shards 2 {weights = array<i64: 3, 1>} : tensor<8x4xf32>, tensor<8xi32> -> tensor<8xf32>
  %w = whale.param "w" zeros [] {shard = array<i64: 1, 2, 16>, shard_weights = array<i64: 3, 1>} : tensor<8x12xf32>
  %e = whale.all_to_all %slots split 0 concat 1 shards 2 {weights = array<i64: 3, 1>} : tensor<4x6x8xf32> -> tensor<3x8x8xf32>
  return
}
