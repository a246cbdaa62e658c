func.func @kind(%x: tensor<2x3x8x8xf32>) {
  %y = whale.pool2d %x kind = "min" kernel = [2, 2] stride = [2, 2] padding = [0, 0] : tensor<2x3x8x8xf32> -> tensor<2x3x4x4xf32>
  return
}
