func.func @bias(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>, %b: tensor<32xf32>, %dy: tensor<8x32xf32>) -> (tensor<8x32xf32>, tensor<32xf32>) {
  %z = whale.matmul %x, %w : tensor<8x16xf32>, tensor<16x32xf32> -> tensor<8x32xf32>
  %y = whale.add %z, %b : tensor<8x32xf32>, tensor<32xf32> -> tensor<8x32xf32>
  %db = whale.binary_grad add %z, %b, %dy operand = 1 : tensor<8x32xf32>, tensor<32xf32>, tensor<8x32xf32> -> tensor<32xf32>
  return %y, %db : tensor<8x32xf32>, tensor<32xf32>
}
