func.func @slice_axis(%x: tensor<8x16xf32>) {
  %s = whale.shard_slice %x axis 2 shards 4 : tensor<8x16xf32> -> tensor<8x4xf32>
  return
}
