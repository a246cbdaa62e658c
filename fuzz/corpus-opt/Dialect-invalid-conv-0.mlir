func.func @groups(%x: tensor<2x6x8x8xf32>, %w: tensor<4x4x3x3xf32>) {
  %y = whale.conv2d %x, %w stride = [1, 1] padding = [0, 0] dilation = [1, 1] groups = 2 : tensor<2x6x8x8xf32>, tensor<4x4x3x3xf32> -> tensor<2x4x6x6xf32>
  return
}
