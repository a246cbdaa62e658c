func.func @param_shard() {
  %w = whale.param "w" zeros [] {shard = array<i64: 2, 4>} : tensor<16x4xf32>
  return
}
