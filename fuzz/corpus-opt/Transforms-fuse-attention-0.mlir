func.func @causal(%q: tensor<2x4x16x8xf32>, %k: tensor<2x4x16x8xf32>, %v: tensor<2x4x16x8xf32>) -> tensor<2x4x16x8xf32> {
  %s = whale.matmul %q, %k {transpose_rhs} : tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32> -> tensor<2x4x16x16xf32>
  %c = whale.constant 2.500000e-01 : tensor<f32>
  %m = whale.mul %s, %c : tensor<2x4x16x16xf32>, tensor<f32> -> tensor<2x4x16x16xf32>
  %x = whale.causal_mask %m : tensor<2x4x16x16xf32>
  %p = whale.softmax %x axis = -1 : tensor<2x4x16x16xf32>
  %o = whale.matmul %p, %v : tensor<2x4x16x16xf32>, tensor<2x4x16x8xf32> -> tensor<2x4x16x8xf32>
  return %o : tensor<2x4x16x8xf32>
}
