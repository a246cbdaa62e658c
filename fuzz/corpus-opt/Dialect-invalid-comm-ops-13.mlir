func.func @broadcast_peers_without_shards() {
  %w = whale.param "w" zeros [] : tensor<4xf32>
  whale.broadcast %w from [1] over "shard_peers" : tensor<4xf32>
  return
}
