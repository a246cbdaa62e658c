func.func @identity_gradients(%a: tensor<4x4xf32>, %b: tensor<4x4xf32>, %dy: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) {
  %da = whale.binary_grad add %a, %b, %dy operand = 0 : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  %dsa = whale.binary_grad sub %a, %b, %dy operand = 0 : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  %dsb = whale.binary_grad sub %a, %b, %dy operand = 1 : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  return %da, %dsa, %dsb : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>
}
