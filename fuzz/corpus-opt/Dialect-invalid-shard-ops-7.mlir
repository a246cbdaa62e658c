func.func @weighted_part(%x: tensor<8x16xf32>) {
  %p = whale.shard_slice %x axis 1 shards 2 {weights = array<i64: 3, 1>} : tensor<8x16xf32> -> tensor<8x5xf32>
  return
}
