// A micro-batch's gradients, summed on their owners, added into the
// owners' running sums.
// CHECK-LABEL: func.func @into_sums
// CHECK: whale.add_into_owners %{{.*}} into %{{.*}} to [1] over "shard_peers" {shards = 2 : i64} : tensor<4xf32> into tensor<4xf32> -> tensor<4xf32>
func.func @into_sums(%g: tensor<4xf32>, %s: tensor<4xf32>) -> tensor<4xf32> {
  %r = whale.add_into_owners %g into %s to [1] over "shard_peers" {shards = 2 : i64} : tensor<4xf32> into tensor<4xf32> -> tensor<4xf32>
  return %r : tensor<4xf32>
}
