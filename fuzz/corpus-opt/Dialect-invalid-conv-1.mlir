func.func @too_big(%x: tensor<2x3x4x4xf32>, %w: tensor<4x3x7x7xf32>) {
  %y = whale.conv2d %x, %w stride = [1, 1] padding = [1, 1] dilation = [1, 1] groups = 1 : tensor<2x3x4x4xf32>, tensor<4x3x7x7xf32> -> tensor<2x4x1x1xf32>
  return
}
