func.func @weight_type(%x: tensor<8x16xf32>, %w: tensor<16xbf16>) {
  %0 = whale.rms_norm %x, %w eps = 1.0e-5 : tensor<8x16xf32>, tensor<16xbf16>
  return
}
