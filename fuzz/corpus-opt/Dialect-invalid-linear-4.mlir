func.func @mixed_operands(%x: tensor<8x16xbf16>, %w: tensor<16x4xf32>, %b: tensor<4xf32>) {
  %0 = whale.linear %x, %w, %b : tensor<8x16xbf16>, tensor<16x4xf32>, tensor<4xf32> -> tensor<8x4xf32>
  return
}
