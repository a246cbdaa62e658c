func.func @reduce_dout(%x: tensor<8x4xf32>, %d: tensor<4xf32>) {
  %0 = whale.reduce_grad mean %x, %d axes = [1] : tensor<8x4xf32>, tensor<4xf32>
  return
}
