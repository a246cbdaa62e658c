func.func @binary_result(%a: tensor<8x4xf32>, %b: tensor<4xf32>, %d: tensor<8x4xf32>) {
  %0 = whale.binary_grad sub %a, %b, %d operand = 1 : tensor<8x4xf32>, tensor<4xf32>, tensor<8x4xf32> -> tensor<8x4xf32>
  return
}
