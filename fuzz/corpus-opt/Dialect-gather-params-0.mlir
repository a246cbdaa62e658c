// A layer's parameters, held by one replica each (ZeRO stage 3), gathered
// into new tensors on every replica.
// CHECK-LABEL: func.func @gathered
// CHECK: whale.param "m/w" zeros [] {group = "replicas", owner = 1 : i64} : tensor<4x4xf32>
// CHECK: whale.gather_params %{{.*}}, %{{.*}} from [1, 0] over "replicas" : tensor<4x4xf32>, tensor<4xf32>
// CHECK: whale.gather_params %{{.*}} from [0] over "shard_peers" {shards = 2 : i64} : tensor<2x4xf32>
func.func @gathered(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %w = whale.param "m/w" zeros [] {group = "replicas", owner = 1 : i64} : tensor<4x4xf32>
  %b = whale.param "m/b" zeros [] {group = "replicas", owner = 0 : i64} : tensor<4xf32>
  %p = whale.param "m/p" zeros [] {shard = array<i64: 0, 2>, group = "shard_peers", shards = 2 : i64, owner = 0 : i64} : tensor<2x4xf32>
  %g:2 = whale.gather_params %w, %b from [1, 0] over "replicas" : tensor<4x4xf32>, tensor<4xf32>
  %q = whale.gather_params %p from [0] over "shard_peers" {shards = 2 : i64} : tensor<2x4xf32>
  %y = whale.matmul %x, %g#0 : tensor<2x4xf32>, tensor<4x4xf32> -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}
