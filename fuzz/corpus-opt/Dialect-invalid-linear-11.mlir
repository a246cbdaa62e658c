func.func @weight_grad_bias(%x: tensor<8x16xf32>, %dy: tensor<8x32xf32>) {
  %0:2 = whale.linear_weight_grad %x, %dy : tensor<8x16xf32>, tensor<8x32xf32> -> tensor<16x32xf32>, tensor<16xf32>
  return
}
