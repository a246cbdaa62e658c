func.func @cast_types(%x: tensor<8xf64>) {
  %0 = whale.cast %x : tensor<8xf64> to tensor<8xbf16>
  return
}
