func.func @bad_group() {
  %w = whale.param "m/w" zeros [] : tensor<4x4xf32>
  // expected-error @+1 {{takes shards exactly when its group is "shard_peers"}}
  %g = whale.gather_params %w from [0] over "shard_peers" : tensor<4x4xf32>
  return
}
