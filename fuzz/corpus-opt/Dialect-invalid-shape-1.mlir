func.func @reshape_type(%x: tensor<8x16xf32>) {
  %0 = whale.reshape %x : tensor<8x16xf32> -> tensor<128xi32>
  return
}
