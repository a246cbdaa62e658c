func.func @attention_batch(%q: tensor<2x4x8x16xf32>, %k: tensor<3x2x8x16xf32>) -> tensor<2x4x8x16xf32> {
  %o = whale.attention %q, %k, %k scale = 0.5 : tensor<2x4x8x16xf32>, tensor<3x2x8x16xf32>
  return %o : tensor<2x4x8x16xf32>
}
