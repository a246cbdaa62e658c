func.func @grad_eps(%x: tensor<8x16xf32>, %w: tensor<16xf32>) {
  %0:2 = whale.rms_norm_grad %x, %w, %x eps = -1.0 : tensor<8x16xf32>, tensor<16xf32>
  return
}
