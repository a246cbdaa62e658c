func.func @last_axis() -> tensor<f32> attributes {whale.model} {
  %p = whale.param "p" normal [0.0, 1.0] : tensor<2x4xf32>
  %q = whale.param "q" normal [0.0, 1.0] : tensor<2x3xf32>
  %s = whale.slice %p axis = -1, start = 1, end = 3 : tensor<2x4xf32> -> tensor<2x2xf32>
  %c = whale.concat %q, %s axis = -1 : tensor<2x3xf32>, tensor<2x2xf32> -> tensor<2x5xf32>
  %r = whale.reduce_sum %c axes = [0, 1] : tensor<2x5xf32> -> tensor<f32>
  return %r : tensor<f32>
}
