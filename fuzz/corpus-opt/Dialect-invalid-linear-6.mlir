func.func @bf16_preactivation_type(%x: tensor<8x16xbf16>, %w: tensor<16x4xbf16>, %b: tensor<4xf32>) {
  %0, %1 = whale.linear %x, %w, %b gelu : tensor<8x16xbf16>, tensor<16x4xbf16>, tensor<4xf32> -> tensor<8x4xbf16>, tensor<8x5xf32>
  return
}
