func.func @channels(%x: tensor<8x4x2x2xf32>, %c: tensor<3xf32>) {
  %y, %m, %s = whale.batch_norm %x, %c, %c, %c, %c momentum = 0.1 eps = 1.0e-5 : tensor<8x4x2x2xf32>, tensor<3xf32>
  return
}
