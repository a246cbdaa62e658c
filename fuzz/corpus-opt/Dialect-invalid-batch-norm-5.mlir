func.func @trained(%x: tensor<8x4xf32>, %c: tensor<4xf32>) {
  %w = whale.param "w" zeros [] : tensor<4xf32>
  %y, %m, %s = whale.batch_norm %x, %c, %c, %c, %w momentum = 0.1 eps = 1.0e-5 : tensor<8x4xf32>, tensor<4xf32>
  return
}
