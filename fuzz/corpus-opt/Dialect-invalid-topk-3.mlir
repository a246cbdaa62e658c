func.func @grad(%g: tensor<16x8xf32>, %d: tensor<16x3xf32>) {
  %x = whale.topk_grad %g, %d k = 2 : tensor<16x8xf32>, tensor<16x3xf32>
  return
}
