func.func @cast_shape(%x: tensor<8x16xf32>) {
  %0 = whale.cast %x : tensor<8x16xf32> to tensor<16x8xbf16>
  return
}
