func.func @gelu_grad(%pre: tensor<8x64xf32>, %h: tensor<8x64xf32>, %w: tensor<64x16xf32>, %dy: tensor<8x16xf32>) -> tensor<8x64xf32> {
  %dh = whale.matmul_grad %h, %w, %dy operand = 0 : tensor<8x64xf32>, tensor<64x16xf32>, tensor<8x16xf32> -> tensor<8x64xf32>
  %dpre = whale.unary_grad gelu %pre, %h, %dh : tensor<8x64xf32>
  return %dpre : tensor<8x64xf32>
}
