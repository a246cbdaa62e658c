func.func @gelu(%x: tensor<2x8x16xf32>, %w: tensor<64x16xf32>, %b: tensor<64xf32>, %dh: tensor<2x8x64xf32>) -> (tensor<2x8x64xf32>, tensor<2x8x64xf32>) {
  %z = whale.matmul %x, %w {transpose_rhs} : tensor<2x8x16xf32>, tensor<64x16xf32> -> tensor<2x8x64xf32>
  %y = whale.add %b, %z : tensor<64xf32>, tensor<2x8x64xf32> -> tensor<2x8x64xf32>
  %h = whale.gelu %y : tensor<2x8x64xf32>
  %dy = whale.unary_grad gelu %y, %h, %dh : tensor<2x8x64xf32>
  return %h, %dy : tensor<2x8x64xf32>, tensor<2x8x64xf32>
}
