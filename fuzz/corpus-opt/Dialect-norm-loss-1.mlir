func.func @attention(%q: tensor<2x8x4xf32>, %k: tensor<2x8x4xf32>) -> tensor<2x8x4xf32> {
  %o = whale.attention %q, %k, %k scale = 0.5 causal : tensor<2x8x4xf32>, tensor<2x8x4xf32>
  %dq, %dk, %dv = whale.attention_grad %q, %k, %k, %o, %q scale = 0.5 causal : tensor<2x8x4xf32>, tensor<2x8x4xf32>
  return %dq : tensor<2x8x4xf32>
}
