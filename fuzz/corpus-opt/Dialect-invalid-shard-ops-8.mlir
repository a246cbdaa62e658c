func.func @weighted_param() {
  %w = whale.param "w" zeros [] {shard = array<i64: 1, 2>, shard_weights = array<i64: 3, 1>} : tensor<16x12xf32>
  return
}
