func.func @range(%x: tensor<8x16xf32>) {
  %0 = whale.reduce_sum %x axes = [2] : tensor<8x16xf32> -> tensor<8xf32>
  return
}
