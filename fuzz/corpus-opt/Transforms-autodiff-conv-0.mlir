func.func @m(%x: tensor<2x3x8x8xf32>) -> tensor<f32> attributes {whale.model} {
  %w = whale.param "m/w" normal [0.0, 0.02] : tensor<4x3x3x3xf32>
  %y = whale.conv2d %x, %w stride = [2, 2] padding = [1, 1] dilation = [1, 1] groups = 1 : tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<2x4x4x4xf32>
  %p = whale.pool2d %y kind = "max" kernel = [2, 2] stride = [2, 2] padding = [0, 0] : tensor<2x4x4x4xf32> -> tensor<2x4x2x2xf32>
  %m = whale.reduce_mean %p axes = [0, 1, 2, 3] : tensor<2x4x2x2xf32> -> tensor<f32>
  return %m : tensor<f32>
}
