func.func @weight_grad_transposed(%x: tensor<8x16xf32>, %dy: tensor<8x32xf32>) {
  %0:2 = whale.linear_weight_grad %x, %dy {transpose_weight} : tensor<8x16xf32>, tensor<8x32xf32> -> tensor<16x32xf32>, tensor<32xf32>
  return
}
