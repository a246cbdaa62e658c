func.func @weights_without_shard() {
  %w = whale.param "w" zeros [] {shard_weights = array<i64: 3, 1>} : tensor<16x12xf32>
  return
}
