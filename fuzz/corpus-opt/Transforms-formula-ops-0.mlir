func.func @m(%x: tensor<4x8xf32>) -> tensor<f32> attributes {whale.model} {
  %b = whale.param "m/b" normal [0.0, 0.5] : tensor<8xf32>
  %s = whale.add %x, %b : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  %y = whale.silu %s : tensor<4x8xf32>
  %p = whale.mul %y, %s : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %l = whale.reduce_mean %p axes = [0, 1] : tensor<4x8xf32> -> tensor<f32>
  return %l : tensor<f32>
}
