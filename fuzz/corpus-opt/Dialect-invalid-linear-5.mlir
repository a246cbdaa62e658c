func.func @bf16_result_of_f32(%x: tensor<8x16xf32>, %w: tensor<16x4xf32>, %b: tensor<4xf32>) {
  %0 = whale.linear %x, %w, %b : tensor<8x16xf32>, tensor<16x4xf32>, tensor<4xf32> -> tensor<8x4xbf16>
  return
}
