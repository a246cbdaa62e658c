func.func @rank(%x: tensor<3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  %y = whale.conv2d %x, %w stride = [1, 1] padding = [1, 1] dilation = [1, 1] groups = 1 : tensor<3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<4x8x8xf32>
  return
}
