func.func @weight_grad(%x: tensor<4x8xbf16>, %w: tensor<8x8xbf16>, %d: tensor<4x8xbf16>) -> tensor<8x8xf32> {
  %g = whale.matmul_grad %x, %w, %d operand = 1 : tensor<4x8xbf16>, tensor<8x8xbf16>, tensor<4x8xbf16> -> tensor<8x8xbf16>
  %f = whale.cast %g : tensor<8x8xbf16> to tensor<8x8xf32>
  return %f : tensor<8x8xf32>
}
