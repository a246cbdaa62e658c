func.func @binary_dout_type(%a: tensor<8x4xf32>, %b: tensor<4xf32>, %d: tensor<8x4xf16>) {
  %0 = whale.binary_grad add %a, %b, %d operand = 0 : tensor<8x4xf32>, tensor<4xf32>, tensor<8x4xf16> -> tensor<8x4xf32>
  return
}
