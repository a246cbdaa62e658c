func.func @reduce_axis(%x: tensor<8x4xf32>, %d: tensor<8xf32>) {
  %0 = whale.reduce_grad sum %x, %d axes = [2] : tensor<8x4xf32>, tensor<8xf32>
  return
}
