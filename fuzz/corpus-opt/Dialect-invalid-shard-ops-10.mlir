func.func @weights_over_whole(%x: tensor<8x4xf32>) {
  %p = whale.shard_slice %x axis 1 shards 2 {weights = array<i64: 4, 1>} : tensor<8x4xf32> -> tensor<8x1xf32>
  return
}
