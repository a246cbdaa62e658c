func.func @binary_types(%a: tensor<8x4xf32>, %b: tensor<4xf16>, %d: tensor<8x4xf32>) {
  %0 = whale.binary_grad add %a, %b, %d operand = 0 : tensor<8x4xf32>, tensor<4xf16>, tensor<8x4xf32> -> tensor<8x4xf32>
  return
}
