func.func @weight_grad_rows(%x: tensor<8x16xf32>, %dy: tensor<4x32xf32>) {
  %0:2 = whale.linear_weight_grad %x, %dy : tensor<8x16xf32>, tensor<4x32xf32> -> tensor<16x32xf32>, tensor<32xf32>
  return
}
