func.func @eps(%x: tensor<8x16xf32>, %w: tensor<16xf32>) {
  %0 = whale.rms_norm %x, %w eps = 0.0 : tensor<8x16xf32>, tensor<16xf32>
  return
}
