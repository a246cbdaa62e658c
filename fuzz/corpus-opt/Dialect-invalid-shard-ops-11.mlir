func.func @parts_overflow(%p: tensor<4611686018427387904xf32>) {
  %x = whale.all_gather %p axis 0 shards 4 : tensor<4611686018427387904xf32> -> tensor<8xf32>
  return
}
