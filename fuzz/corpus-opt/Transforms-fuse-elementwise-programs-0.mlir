func.func @bias_gradient(%x: tensor<8x16xf32>, %b: tensor<16xf32>, %dy: tensor<8x16xf32>) -> (tensor<8x16xf32>, tensor<16xf32>) {
  %y = whale.gelu %x : tensor<8x16xf32>
  %d = whale.unary_grad gelu %x, %y, %dy : tensor<8x16xf32>
  %s = whale.binary_grad add %x, %b, %d operand = 1 : tensor<8x16xf32>, tensor<16xf32>, tensor<8x16xf32> -> tensor<16xf32>
  return %d, %s : tensor<8x16xf32>, tensor<16xf32>
}
