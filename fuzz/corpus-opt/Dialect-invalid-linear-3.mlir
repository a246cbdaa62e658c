func.func @bf16_bias(%x: tensor<8x16xbf16>, %w: tensor<16x4xbf16>, %b: tensor<4xbf16>) {
  %0 = whale.linear %x, %w, %b : tensor<8x16xbf16>, tensor<16x4xbf16>, tensor<4xbf16> -> tensor<8x4xbf16>
  return
}
