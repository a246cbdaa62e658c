func.func @ce_result_shape(%l: tensor<8x4xf32>, %y: tensor<8xi32>, %d: tensor<8xf32>) {
  %0 = "whale.cross_entropy_grad"(%l, %y, %d) : (tensor<8x4xf32>, tensor<8xi32>, tensor<8xf32>) -> tensor<8x2xf32>
  return
}
