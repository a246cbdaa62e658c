func.func @ce_dloss(%l: tensor<8x4xf32>, %y: tensor<8xi32>, %d: tensor<4xf32>) {
  %0 = whale.cross_entropy_grad %l, %y, %d : tensor<8x4xf32>, tensor<8xi32>, tensor<4xf32>
  return
}
