func.func @attention_grad_grouped_heads(%q: tensor<2x4x8x16xf32>, %k: tensor<2x3x8x16xf32>) -> tensor<2x4x8x16xf32> {
  %dq, %dk, %dv = whale.attention_grad %q, %k, %k, %q, %q scale = 0.5 : tensor<2x4x8x16xf32>, tensor<2x3x8x16xf32>
  return %dq : tensor<2x4x8x16xf32>
}
