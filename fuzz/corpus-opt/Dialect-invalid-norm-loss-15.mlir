func.func @ce_type(%l: tensor<8x10xf32>, %y: tensor<8xi32>) {
  %0 = whale.cross_entropy %l, %y : tensor<8x10xf32>, tensor<8xi32> -> tensor<8xbf16>
  return
}
