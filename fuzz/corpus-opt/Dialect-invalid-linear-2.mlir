func.func @contracting(%x: tensor<8x16xf32>, %w: tensor<4x16xf32>, %b: tensor<4xf32>) {
  %0 = whale.linear %x, %w, %b : tensor<8x16xf32>, tensor<4x16xf32>, tensor<4xf32> -> tensor<8x16xf32>
  return
}
