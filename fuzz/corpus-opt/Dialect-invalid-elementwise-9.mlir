func.func @cast_same(%x: tensor<8xf32>) {
  %0 = whale.cast %x : tensor<8xf32> to tensor<8xf32>
  return
}
