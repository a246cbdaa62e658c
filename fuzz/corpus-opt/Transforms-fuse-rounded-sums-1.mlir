func.func @sum_first(%dy: tensor<8x32xf32>, %b: tensor<32xf32>) -> (tensor<8x32xbf16>, tensor<32xf32>) {
  %db = whale.binary_grad add %b, %dy, %dy operand = 0 : tensor<32xf32>, tensor<8x32xf32>, tensor<8x32xf32> -> tensor<32xf32>
  %n = whale.neg %db : tensor<32xf32>
  %r = whale.cast %dy : tensor<8x32xf32> to tensor<8x32xbf16>
  return %r, %n : tensor<8x32xbf16>, tensor<32xf32>
}
