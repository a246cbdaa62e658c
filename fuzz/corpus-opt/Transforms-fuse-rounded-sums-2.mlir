func.func @table_bias(%dy: tensor<2x8x32xf32>, %b: tensor<8x32xf32>) -> (tensor<2x8x32xbf16>, tensor<8x32xf32>) {
  %r = whale.cast %dy : tensor<2x8x32xf32> to tensor<2x8x32xbf16>
  %db = whale.binary_grad add %dy, %b, %dy operand = 1 : tensor<2x8x32xf32>, tensor<8x32xf32>, tensor<2x8x32xf32> -> tensor<8x32xf32>
  return %r, %db : tensor<2x8x32xbf16>, tensor<8x32xf32>
}
