func.func @attention_grad_causal_lengths(%q: tensor<8x4xf32>, %k: tensor<6x4xf32>) {
  %dq, %dk, %dv = whale.attention_grad %q, %k, %k, %q, %q scale = 0.5 causal : tensor<8x4xf32>, tensor<6x4xf32>
  return
}
