func.func @into_over_stages(%g: tensor<4xf32>, %s: tensor<4xf32>) {
  // expected-error @+1 {{adds over the replicas or the shard peers, not the stages}}
  %r = whale.add_into_owners %g into %s to [0] over "stages" : tensor<4xf32> into tensor<4xf32> -> tensor<4xf32>
  return
}
