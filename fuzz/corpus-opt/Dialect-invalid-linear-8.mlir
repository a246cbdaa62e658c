func.func @preactivation_without_gelu(%x: tensor<8x16xf32>, %w: tensor<16x4xf32>, %b: tensor<4xf32>) {
  %0, %1 = whale.linear %x, %w, %b : tensor<8x16xf32>, tensor<16x4xf32>, tensor<4xf32> -> tensor<8x4xf32>, tensor<8x4xf32>
  return
}
