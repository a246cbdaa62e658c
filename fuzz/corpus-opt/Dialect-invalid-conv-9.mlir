func.func @huge_pool(%x: tensor<2x3x8x8xf32>) {
  %y = whale.pool2d %x kind = "avg" kernel = [4611686018427387904, 2] stride = [2, 2] padding = [2305843009213693952, 0] : tensor<2x3x8x8xf32> -> tensor<2x3x4x4xf32>
  return
}
