func.func @gelu_grad_bf16_of_f32(%pre: tensor<8x64xbf16>, %w: tensor<64x16xf32>, %dy: tensor<8x16xf32>) {
  %0 = whale.gelu_matmul_grad %pre, %w, %dy : tensor<8x64xbf16>, tensor<64x16xf32>, tensor<8x16xf32> -> tensor<8x64xbf16>
  return
}
