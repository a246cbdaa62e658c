func.func @gelu_grad_weight(%pre: tensor<8x64xf32>, %w: tensor<2x64x16xf32>, %dy: tensor<8x16xf32>) {
  %0 = whale.gelu_matmul_grad %pre, %w, %dy : tensor<8x64xf32>, tensor<2x64x16xf32>, tensor<8x16xf32> -> tensor<8x64xf32>
  return
}
