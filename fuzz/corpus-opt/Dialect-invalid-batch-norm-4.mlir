func.func @copies(%x: tensor<8x4xf32>, %c: tensor<4xf32>) {
  %y, %m, %s = whale.batch_norm %x, %c, %c, %c, %c momentum = 0.1 eps = 1.0e-5 {row_copies = 0} : tensor<8x4xf32>, tensor<4xf32>
  return
}
