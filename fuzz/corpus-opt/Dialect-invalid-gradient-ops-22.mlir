func.func @ce_type(%l: tensor<8x4xf32>, %y: tensor<8xi32>, %d: tensor<8xf16>) {
  %0 = whale.cross_entropy_grad %l, %y, %d : tensor<8x4xf32>, tensor<8xi32>, tensor<8xf16>
  return
}
