func.func @rank(%x: tensor<f32>, %w: tensor<1xf32>) {
  %0 = whale.rms_norm %x, %w eps = 1.0e-5 : tensor<f32>, tensor<1xf32>
  return
}
