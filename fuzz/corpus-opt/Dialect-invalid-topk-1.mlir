func.func @indices(%g: tensor<16x8xf32>) {
  %v = whale.topk %g k = 2 indices : tensor<16x8xf32> -> tensor<16x2xf32>
  return
}
