func.func @bias_shape(%x: tensor<8x16xf32>, %w: tensor<16x4xf32>, %b: tensor<1x4xf32>) {
  %0 = whale.linear %x, %w, %b : tensor<8x16xf32>, tensor<16x4xf32>, tensor<1x4xf32> -> tensor<8x4xf32>
  return
}
