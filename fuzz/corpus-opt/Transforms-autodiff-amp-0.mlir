func.func @amp(%x: tensor<4x3xf32>) -> tensor<f32> attributes {whale.model} {
  %w = whale.param "w" normal [0.0, 0.02] : tensor<3x2xf32>
  %xb = whale.cast %x : tensor<4x3xf32> to tensor<4x3xbf16>
  %wb = whale.cast %w : tensor<3x2xf32> to tensor<3x2xbf16>
  %y = whale.matmul %xb, %wb : tensor<4x3xbf16>, tensor<3x2xbf16> -> tensor<4x2xbf16>
  %yf = whale.cast %y : tensor<4x2xbf16> to tensor<4x2xf32>
  %m = whale.reduce_mean %yf axes = [0, 1] : tensor<4x2xf32> -> tensor<f32>
  return %m : tensor<f32>
}
