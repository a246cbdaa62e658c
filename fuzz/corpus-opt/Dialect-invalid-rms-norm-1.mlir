func.func @weight(%x: tensor<8x16xf32>, %w: tensor<8xf32>) {
  %0 = whale.rms_norm %x, %w eps = 1.0e-5 : tensor<8x16xf32>, tensor<8xf32>
  return
}
