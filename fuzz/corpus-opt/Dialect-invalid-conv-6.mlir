func.func @pad(%x: tensor<2x3x8x8xf32>) {
  %y = whale.pool2d %x kind = "avg" kernel = [2, 2] stride = [2, 2] padding = [2, 0] : tensor<2x3x8x8xf32> -> tensor<2x3x6x4xf32>
  return
}
