func.func @softmax_axis(%x: tensor<8x16xf32>) {
  %0 = whale.softmax %x axis = 2 : tensor<8x16xf32>
  return
}
