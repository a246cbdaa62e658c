func.func @ce_result_type(%l: tensor<8x4xbf16>, %y: tensor<8xi32>, %d: tensor<8xf32>) {
  %0 = "whale.cross_entropy_grad"(%l, %y, %d) : (tensor<8x4xbf16>, tensor<8xi32>, tensor<8xf32>) -> tensor<8x4xbf16>
  return
}
