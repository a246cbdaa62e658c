func.func @eps(%x: tensor<8x4xf32>, %c: tensor<4xf32>) {
  %y, %m, %s = whale.batch_norm %x, %c, %c, %c, %c momentum = 0.1 eps = 0.0 : tensor<8x4xf32>, tensor<4xf32>
  return
}
