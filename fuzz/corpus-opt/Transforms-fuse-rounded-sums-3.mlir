func.func @apart(%dy: tensor<8x32xf32>, %h: tensor<8x32xbf16>, %other: tensor<8x32xf32>, %b: tensor<32xf32>, %c: tensor<8x32xf32>) -> (tensor<8x32xbf16>, tensor<8x32xf32>, tensor<32xf32>, tensor<32xf32>, tensor<8x32xf32>) {
  %r = whale.cast %dy : tensor<8x32xf32> to tensor<8x32xbf16>
  %w = whale.cast %h : tensor<8x32xbf16> to tensor<8x32xf32>
  %d1 = whale.binary_grad sub %dy, %b, %dy operand = 1 : tensor<8x32xf32>, tensor<32xf32>, tensor<8x32xf32> -> tensor<32xf32>
  %d2 = whale.binary_grad add %other, %b, %other operand = 1 : tensor<8x32xf32>, tensor<32xf32>, tensor<8x32xf32> -> tensor<32xf32>
  %d3 = whale.binary_grad add %dy, %c, %dy operand = 1 : tensor<8x32xf32>, tensor<8x32xf32>, tensor<8x32xf32> -> tensor<8x32xf32>
  return %r, %w, %d1, %d2, %d3 : tensor<8x32xbf16>, tensor<8x32xf32>, tensor<32xf32>, tensor<32xf32>, tensor<8x32xf32>
}
