func.func @attention_grouped_heads(%q: tensor<2x6x8x16xf32>, %k: tensor<2x4x8x16xf32>) -> tensor<2x6x8x16xf32> {
  %o = whale.attention %q, %k, %k scale = 0.5 : tensor<2x6x8x16xf32>, tensor<2x4x8x16xf32>
  return %o : tensor<2x6x8x16xf32>
}
