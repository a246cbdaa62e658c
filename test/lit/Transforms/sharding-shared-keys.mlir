// RUN: whale-opt %s --whale-virtual-devices=devices=4 --whale-pipeline=global-batch=8 --whale-sharding | FileCheck %s

// Grouped-query attention (16 query heads, 2 key and value heads) split
// over 4 ranks: the query heads split with their projection's columns, and
// each rank reads the key and value head its 4 query heads share, which 2
// ranks hold (a shard_slice of 2 parts: no data moves; its gradient
// gathers the ranks' terms and adds each head's two). It moves fewer bytes
// than gathering the queries to attend whole on every rank.
// CHECK-LABEL: func.func @gqa
// CHECK: {costs = {shared_keys = 3072 : i64, whole = 5120 : i64}, op = "attention {{.*}}pattern = "shared_keys", result = "part(1)"
// CHECK: %[[K:.*]] = whale.shard_slice %{{.*}} axis 1 shards 4 parts 2 : tensor<8x2x8x4xf32> -> tensor<8x1x8x4xf32>
// CHECK: %[[V:.*]] = whale.shard_slice %{{.*}} axis 1 shards 4 parts 2 : tensor<8x2x8x4xf32> -> tensor<8x1x8x4xf32>
// CHECK: whale.attention %{{.*}}, %[[K]], %[[V]] scale = 5.000000e-01 causal : tensor<8x4x8x4xf32>, tensor<8x1x8x4xf32>
func.func @gqa(%x: tensor<2x8x16xf32>) -> tensor<f32> attributes {whale.model} {
  %l = whale.taskgraph split -> (tensor<f32>) {
    %wq = whale.param "wq" normal [0.0, 2.0e-02] : tensor<16x64xf32>
    %q0 = whale.matmul %x, %wq : tensor<2x8x16xf32>, tensor<16x64xf32> -> tensor<2x8x64xf32>
    %q1 = whale.reshape %q0 : tensor<2x8x64xf32> -> tensor<2x8x16x4xf32>
    %q = whale.transpose %q1 permutation = [0, 2, 1, 3] : tensor<2x8x16x4xf32> -> tensor<2x16x8x4xf32>
    %wk = whale.param "wk" normal [0.0, 2.0e-02] : tensor<16x8xf32>
    %k0 = whale.matmul %x, %wk : tensor<2x8x16xf32>, tensor<16x8xf32> -> tensor<2x8x8xf32>
    %k1 = whale.reshape %k0 : tensor<2x8x8xf32> -> tensor<2x8x2x4xf32>
    %k = whale.transpose %k1 permutation = [0, 2, 1, 3] : tensor<2x8x2x4xf32> -> tensor<2x2x8x4xf32>
    %wv = whale.param "wv" normal [0.0, 2.0e-02] : tensor<16x8xf32>
    %v0 = whale.matmul %x, %wv : tensor<2x8x16xf32>, tensor<16x8xf32> -> tensor<2x8x8xf32>
    %v1 = whale.reshape %v0 : tensor<2x8x8xf32> -> tensor<2x8x2x4xf32>
    %v = whale.transpose %v1 permutation = [0, 2, 1, 3] : tensor<2x8x2x4xf32> -> tensor<2x2x8x4xf32>
    %o = whale.attention %q, %k, %v scale = 0.5 causal : tensor<2x16x8x4xf32>, tensor<2x2x8x4xf32>
    %m = whale.reduce_mean %o axes = [0, 1, 2, 3] : tensor<2x16x8x4xf32> -> tensor<f32>
    whale.yield %m : tensor<f32>
  }
  return %l : tensor<f32>
}
