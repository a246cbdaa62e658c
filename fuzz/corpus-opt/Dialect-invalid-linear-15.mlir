func.func @gelu_grad_dout(%pre: tensor<8x64xf32>, %w: tensor<64x16xf32>, %dy: tensor<8x32xf32>) {
  %0 = whale.gelu_matmul_grad %pre, %w, %dy : tensor<8x64xf32>, tensor<64x16xf32>, tensor<8x32xf32> -> tensor<8x64xf32>
  return
}
