func.func @ce_labels(%l: tensor<8x4xf32>, %y: tensor<4xi32>, %d: tensor<8xf32>) {
  %0 = whale.cross_entropy_grad %l, %y, %d : tensor<8x4xf32>, tensor<4xi32>, tensor<8xf32>
  return
}
