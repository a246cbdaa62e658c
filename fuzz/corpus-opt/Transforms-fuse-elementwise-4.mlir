func.func @bias_gradient(%h: tensor<8x16xf32>, %b: tensor<16xf32>, %dy: tensor<8x16xf32>, %w: tensor<16x16xf32>) -> (tensor<16xf32>, tensor<8x16xf32>) {
  %g = whale.gelu %h : tensor<8x16xf32>
  %d = whale.unary_grad gelu %h, %g, %dy : tensor<8x16xf32>
  %db = whale.binary_grad add %h, %b, %d operand = 1 : tensor<8x16xf32>, tensor<16xf32>, tensor<8x16xf32> -> tensor<16xf32>
  %dx = whale.matmul %d, %w : tensor<8x16xf32>, tensor<16x16xf32> -> tensor<8x16xf32>
  %s = whale.mul %db, %b : tensor<16xf32>, tensor<16xf32> -> tensor<16xf32>
  return %s, %dx : tensor<16xf32>, tensor<8x16xf32>
}
