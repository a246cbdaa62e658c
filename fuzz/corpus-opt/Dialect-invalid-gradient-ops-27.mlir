func.func @reduce_order(%x: tensor<8x4xf32>, %d: tensor<f32>) {
  %0 = whale.reduce_grad sum %x, %d axes = [1, 0] : tensor<8x4xf32>, tensor<f32>
  return
}
