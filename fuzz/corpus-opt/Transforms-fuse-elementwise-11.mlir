func.func @priced_sum(%h: tensor<8x16xf32>, %b: tensor<16xf32>, %dy: tensor<8x16xf32>) -> (tensor<16xf32>, tensor<8x16xf32>) {
  %g = whale.gelu %h : tensor<8x16xf32>
  %d = whale.unary_grad gelu %h, %g, %dy : tensor<8x16xf32>
  %db = whale.binary_grad add %h, %b, %d operand = 1 : tensor<8x16xf32>, tensor<16xf32>, tensor<8x16xf32> -> tensor<16xf32>
  return %db, %d : tensor<16xf32>, tensor<8x16xf32>
}
