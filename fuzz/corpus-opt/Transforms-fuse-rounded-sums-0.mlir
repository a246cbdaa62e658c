func.func @projection(%dy: tensor<2x8x32xf32>, %x: tensor<2x8x16xbf16>, %w: tensor<16x32xbf16>, %b: tensor<32xf32>) -> (tensor<2x8x16xf32>, tensor<16x32xf32>, tensor<32xf32>, tensor<2x8x32xf32>) {
  %r = whale.cast %dy : tensor<2x8x32xf32> to tensor<2x8x32xbf16>
  %dx = whale.matmul_grad %x, %w, %r operand = 0 : tensor<2x8x16xbf16>, tensor<16x32xbf16>, tensor<2x8x32xbf16> -> tensor<2x8x16xf32>
  %dw = whale.matmul_grad %x, %w, %r operand = 1 : tensor<2x8x16xbf16>, tensor<16x32xbf16>, tensor<2x8x32xbf16> -> tensor<16x32xf32>
  %db = whale.binary_grad add %dy, %b, %dy operand = 1 : tensor<2x8x32xf32>, tensor<32xf32>, tensor<2x8x32xf32> -> tensor<32xf32>
  return %dx, %dw, %db, %dy : tensor<2x8x16xf32>, tensor<16x32xf32>, tensor<32xf32>, tensor<2x8x32xf32>
}
