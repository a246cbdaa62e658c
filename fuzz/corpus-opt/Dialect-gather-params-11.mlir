// A micro-batch's gradients summed into their owners' running sums.
// CHECK-LABEL: func.func @into_sums
// CHECK: whale.reduce_into_owners %{{.*}} into %{{.*}} to [1] over "shard_peers" {shards = 2 : i64} : tensor<4xf32> into tensor<4xf32> -> tensor<4xf32>
func.func @into_sums(%g: tensor<4xf32>, %s: tensor<4xf32>) -> tensor<4xf32> {
  %r = whale.reduce_into_owners %g into %s to [1] over "shard_peers" {shards = 2 : i64} : tensor<4xf32> into tensor<4xf32> -> tensor<4xf32>
  return %r : tensor<4xf32>
}
