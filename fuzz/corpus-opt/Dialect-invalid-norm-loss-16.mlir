func.func @attention_causal_lengths(%q: tensor<8x4xf32>, %k: tensor<6x4xf32>) -> tensor<8x4xf32> {
  %o = whale.attention %q, %k, %k scale = 0.5 causal : tensor<8x4xf32>, tensor<6x4xf32>
  return %o : tensor<8x4xf32>
}
