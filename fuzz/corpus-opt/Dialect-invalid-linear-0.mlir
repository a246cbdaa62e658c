func.func @weight_rank(%x: tensor<8x16xf32>, %w: tensor<2x16x4xf32>, %b: tensor<4xf32>) {
  %0 = whale.linear %x, %w, %b : tensor<8x16xf32>, tensor<2x16x4xf32>, tensor<4xf32> -> tensor<2x8x4xf32>
  return
}
