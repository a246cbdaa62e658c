func.func @not_layers(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>, %b: tensor<32xf32>, %rows: tensor<8x1xf32>, %xt: tensor<16x8xf32>, %xb: tensor<2x8x16xf32>, %wb: tensor<2x16x32xf32>) -> (tensor<8x32xf32>, tensor<8x32xf32>, tensor<8x32xf32>, tensor<8x32xf32>, tensor<2x8x32xf32>) {
  %z = whale.matmul %x, %w : tensor<8x16xf32>, tensor<16x32xf32> -> tensor<8x32xf32>
  %y = whale.add %z, %b : tensor<8x32xf32>, tensor<32xf32> -> tensor<8x32xf32>
  %r = whale.relu %z : tensor<8x32xf32>
  %z2 = whale.matmul %x, %w : tensor<8x16xf32>, tensor<16x32xf32> -> tensor<8x32xf32>
  %y2 = whale.add %z2, %rows : tensor<8x32xf32>, tensor<8x1xf32> -> tensor<8x32xf32>
  %z3 = whale.matmul %xt, %w {transpose_lhs} : tensor<16x8xf32>, tensor<16x32xf32> -> tensor<8x32xf32>
  %y3 = whale.add %z3, %b : tensor<8x32xf32>, tensor<32xf32> -> tensor<8x32xf32>
  %z4 = whale.matmul %xb, %wb : tensor<2x8x16xf32>, tensor<2x16x32xf32> -> tensor<2x8x32xf32>
  %y4 = whale.add %z4, %b : tensor<2x8x32xf32>, tensor<32xf32> -> tensor<2x8x32xf32>
  return %y, %r, %y2, %y3, %y4 : tensor<8x32xf32>, tensor<8x32xf32>, tensor<8x32xf32>, tensor<8x32xf32>, tensor<2x8x32xf32>
}
