func.func @in_place_reader(%a: tensor<4xf32>, %b: tensor<4xf32>, %dy: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %da = whale.binary_grad add %a, %b, %dy operand = 0 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %s = whale.all_reduce %da over "replicas" : tensor<4xf32> -> tensor<4xf32>
  return %s, %dy : tensor<4xf32>, tensor<4xf32>
}
