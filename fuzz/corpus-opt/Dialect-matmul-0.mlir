func.func @plain(%a: tensor<8x16xf32>, %b: tensor<16x4xf32>) -> tensor<8x4xf32> {
  %0 = whale.matmul %a, %b : tensor<8x16xf32>, tensor<16x4xf32> -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}

func.func @transposed(%a: tensor<8x16xf32>, %b: tensor<4x16xf32>, %c: tensor<16x8xf32>, %d: tensor<16x4xf32>) {
  %0 = whale.matmul %a, %b {transpose_rhs} : tensor<8x16xf32>, tensor<4x16xf32> -> tensor<8x4xf32>
  %1 = whale.matmul %c, %d {transpose_lhs} : tensor<16x8xf32>, tensor<16x4xf32> -> tensor<8x4xf32>
  %2 = whale.matmul %c, %b {transpose_lhs, transpose_rhs} : tensor<16x8xf32>, tensor<4x16xf32> -> tensor<8x4xf32>
  return
}

func.func @batched(%a: tensor<2x8x16xf32>, %w: tensor<16x4xf32>, %q: tensor<2x3x8x5xf32>, %k: tensor<2x3x8x5xf32>) {
  %0 = whale.matmul %a, %w : tensor<2x8x16xf32>, tensor<16x4xf32> -> tensor<2x8x4xf32>
  %1 = whale.matmul %q, %k {transpose_rhs} : tensor<2x3x8x5xf32>, tensor<2x3x8x5xf32> -> tensor<2x3x8x8xf32>
  return
}
