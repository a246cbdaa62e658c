func.func @batched(%q: tensor<2x4x8xf32>, %k: tensor<2x4x8xf32>) -> tensor<2x4x4xf32> {
  %0 = whale.matmul %q, %k {transpose_rhs} : tensor<2x4x8xf32>, tensor<2x4x8xf32> -> tensor<2x4x4xf32>
  return %0 : tensor<2x4x4xf32>
}
