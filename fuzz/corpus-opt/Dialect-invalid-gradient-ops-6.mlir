func.func @binary_dout(%a: tensor<8x4xf32>, %b: tensor<4xf32>, %d: tensor<4xf32>) {
  %0 = whale.binary_grad mul %a, %b, %d operand = 0 : tensor<8x4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<8x4xf32>
  return
}
