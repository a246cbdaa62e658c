func.func @grad_dy(%x: tensor<2x3x8x8xf32>, %d: tensor<2x3x8x8xf32>) {
  %dx = whale.pool2d_grad %x, %d kind = "max" kernel = [2, 2] stride = [2, 2] padding = [0, 0] : tensor<2x3x8x8xf32>, tensor<2x3x8x8xf32>
  return
}
