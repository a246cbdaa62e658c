func.func @type(%x: tensor<8x16xf32>) {
  %0 = whale.reduce_sum %x axes = [1] : tensor<8x16xf32> -> tensor<8xf16>
  return
}
