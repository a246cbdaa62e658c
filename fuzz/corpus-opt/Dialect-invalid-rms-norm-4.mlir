func.func @grad_weight(%x: tensor<8x16xf32>, %w: tensor<4xf32>) {
  %0:2 = whale.rms_norm_grad %x, %w, %x eps = 1.0e-5 : tensor<8x16xf32>, tensor<4xf32>
  return
}
