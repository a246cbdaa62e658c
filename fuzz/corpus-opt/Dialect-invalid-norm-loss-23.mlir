func.func @attention_sequence_major_causal(%q: tensor<2x8x4x16xf32>, %k: tensor<2x6x4x16xf32>) -> tensor<2x8x4x16xf32> {
  %o = whale.attention %q, %k, %k scale = 0.5 causal sequence_major : tensor<2x8x4x16xf32>, tensor<2x6x4x16xf32>
  return %o : tensor<2x8x4x16xf32>
}
