func.func @k(%g: tensor<16x8xf32>) {
  %v = whale.topk %g k = 9 : tensor<16x8xf32> -> tensor<16x9xf32>
  return
}
