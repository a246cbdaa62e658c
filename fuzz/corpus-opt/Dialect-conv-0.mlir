func.func @conv(%x: tensor<4x6x9x9xf32>, %w: tensor<8x3x3x3xf32>, %d: tensor<4x8x3x3xf32>) -> (tensor<4x6x9x9xf32>, tensor<8x3x3x3xf32>, tensor<4x8x5x5xf32>) {
  %y = whale.conv2d %x, %w stride = [2, 1] padding = [1, 0] dilation = [1, 2] groups = 2 : tensor<4x6x9x9xf32>, tensor<8x3x3x3xf32> -> tensor<4x8x5x5xf32>
  %p = whale.pool2d %y kind = "max" kernel = [3, 3] stride = [2, 2] padding = [1, 1] : tensor<4x8x5x5xf32> -> tensor<4x8x3x3xf32>
  %dx, %dw = whale.conv2d_grad %x, %w, %y stride = [2, 1] padding = [1, 0] dilation = [1, 2] groups = 2 : tensor<4x6x9x9xf32>, tensor<8x3x3x3xf32>, tensor<4x8x5x5xf32>
  %dp = whale.pool2d_grad %y, %p kind = "avg" kernel = [3, 3] stride = [2, 2] padding = [1, 1] : tensor<4x8x5x5xf32>, tensor<4x8x3x3xf32>
  return %dx, %dw, %dp : tensor<4x6x9x9xf32>, tensor<8x3x3x3xf32>, tensor<4x8x5x5xf32>
}
