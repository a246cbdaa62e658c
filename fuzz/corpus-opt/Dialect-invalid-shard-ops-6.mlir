func.func @weights_count(%p: tensor<2x16xf32>) {
  %x = whale.all_gather %p axis 0 shards 2 {weights = array<i64: 3, 1, 1>} : tensor<2x16xf32> -> tensor<8x16xf32>
  return
}
