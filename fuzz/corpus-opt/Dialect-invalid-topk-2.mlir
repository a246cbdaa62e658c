func.func @shape(%g: tensor<16x8xf32>) {
  %v = whale.topk %g k = 2 : tensor<16x8xf32> -> tensor<16x3xf32>
  return
}
