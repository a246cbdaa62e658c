func.func @bias_gradient(%d: tensor<4x16xbf16>, %y: tensor<4x16xbf16>) -> (tensor<4x16xbf16>, tensor<16xf32>) {
  %g = whale.mul %d, %y : tensor<4x16xbf16>, tensor<4x16xbf16> -> tensor<4x16xbf16>
  %w = whale.cast %g : tensor<4x16xbf16> to tensor<4x16xf32>
  %s = whale.reduce_sum %w axes = [0] : tensor<4x16xf32> -> tensor<16xf32>
  return %g, %s : tensor<4x16xbf16>, tensor<16xf32>
}
