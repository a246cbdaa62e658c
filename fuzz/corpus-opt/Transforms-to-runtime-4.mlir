func.func @lm(%ids: tensor<2x5xi32>) -> tensor<2x5xf32> attributes {whale.model} {
  %t = whale.param "lm/table" normal [0.0, 0.02] : tensor<16x16xf32>
  %e = whale.embedding %t[%ids] : tensor<16x16xf32>, tensor<2x5xi32> -> tensor<2x5x16xf32>
  %l = whale.cross_entropy %e, %ids : tensor<2x5x16xf32>, tensor<2x5xi32> -> tensor<2x5xf32>
  return %l : tensor<2x5xf32>
}
