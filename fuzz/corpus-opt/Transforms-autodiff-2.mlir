func.func @lm(%ids: tensor<2x4xi32>) -> tensor<f32> attributes {whale.model} {
  %t = whale.param "lm/table" normal [0.0, 0.1] : tensor<8x4xf32>
  %e = whale.embedding %t[%ids] : tensor<8x4xf32>, tensor<2x4xi32> -> tensor<2x4x4xf32>
  %s = whale.softmax %e axis = -1 : tensor<2x4x4xf32>
  %c = whale.cross_entropy %s, %ids : tensor<2x4x4xf32>, tensor<2x4xi32> -> tensor<2x4xf32>
  %l = whale.reduce_mean %c axes = [0, 1] : tensor<2x4xf32> -> tensor<f32>
  return %l : tensor<f32>
}
