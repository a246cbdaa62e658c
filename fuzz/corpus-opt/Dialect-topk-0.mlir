func.func @topk(%g: tensor<16x8xf32>) -> (tensor<16x2xi32>, tensor<16x8xf32>) {
  %v = whale.topk %g k = 2 : tensor<16x8xf32> -> tensor<16x2xf32>
  %i = whale.topk %g k = 2 indices : tensor<16x8xf32> -> tensor<16x2xi32>
  %d = whale.topk_grad %g, %v k = 2 : tensor<16x8xf32>, tensor<16x2xf32>
  return %i, %d : tensor<16x2xi32>, tensor<16x8xf32>
}
