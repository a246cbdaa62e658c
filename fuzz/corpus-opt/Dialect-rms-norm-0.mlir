func.func @rms(%x: tensor<2x8x16xf32>, %w: tensor<16xf32>, %dy: tensor<2x8x16xf32>) -> (tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<16xf32>) {
  %y = whale.rms_norm %x, %w eps = 1.0e-6 : tensor<2x8x16xf32>, tensor<16xf32>
  %dx, %dw = whale.rms_norm_grad %x, %w, %dy eps = 1.0e-6 : tensor<2x8x16xf32>, tensor<16xf32>
  return %y, %dx, %dw : tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<16xf32>
}
