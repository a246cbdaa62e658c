func.func @twice() -> tensor<f32> attributes {whale.model} {
  %p = whale.param "p" normal [0.0, 1.0] : tensor<2xf32>
  %sq = whale.mul %p, %p : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
  %s = whale.reduce_sum %sq axes = [0] : tensor<2xf32> -> tensor<f32>
  return %s : tensor<f32>
}
