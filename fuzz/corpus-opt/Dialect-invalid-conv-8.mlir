func.func @huge_window(%x: tensor<2x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  %y = whale.conv2d %x, %w stride = [1, 1] padding = [4611686018427387904, 1] dilation = [4611686018427387904, 1] groups = 1 : tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<2x4x8x8xf32>
  return
}
