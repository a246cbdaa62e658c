func.func @attention_grouped(%q: tensor<2x8x6x16xf32>, %k: tensor<2x2x6x16xf32>, %sq: tensor<2x6x8x16xf32>, %sk: tensor<2x5x2x16xf32>) -> (tensor<2x2x6x16xf32>, tensor<2x6x8x16xf32>) {
  %o = whale.attention %q, %k, %k scale = 0.25 causal : tensor<2x8x6x16xf32>, tensor<2x2x6x16xf32>
  %dq, %dk, %dv = whale.attention_grad %q, %k, %k, %o, %q scale = 0.25 causal : tensor<2x8x6x16xf32>, tensor<2x2x6x16xf32>
  %s = whale.attention %sq, %sk, %sk scale = 0.25 sequence_major : tensor<2x6x8x16xf32>, tensor<2x5x2x16xf32>
  return %dk, %s : tensor<2x2x6x16xf32>, tensor<2x6x8x16xf32>
}
