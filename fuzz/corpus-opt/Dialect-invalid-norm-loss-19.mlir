func.func @attention_sequence_major_heads(%q: tensor<2x8x4x16xf32>, %k: tensor<2x8x3x16xf32>) -> tensor<2x8x4x16xf32> {
  %o = whale.attention %q, %k, %k scale = 0.5 sequence_major : tensor<2x8x4x16xf32>, tensor<2x8x3x16xf32>
  return %o : tensor<2x8x4x16xf32>
}
