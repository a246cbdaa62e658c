func.func @heads(%x: tensor<2x16x4x8xf32>, %y: tensor<2x16x4x8xf32>, %z: tensor<2x16x4x8xf32>) -> tensor<2x16x4x8xf32> {
  %q = whale.transpose %x permutation = [0, 2, 1, 3] : tensor<2x16x4x8xf32> -> tensor<2x4x16x8xf32>
  %k = whale.transpose %y permutation = [0, 2, 1, 3] : tensor<2x16x4x8xf32> -> tensor<2x4x16x8xf32>
  %v = whale.transpose %z permutation = [0, 2, 1, 3] : tensor<2x16x4x8xf32> -> tensor<2x4x16x8xf32>
  %s = whale.matmul %q, %k {transpose_rhs} : tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32> -> tensor<2x4x16x16xf32>
  %c = whale.constant 2.500000e-01 : tensor<f32>
  %m = whale.mul %s, %c : tensor<2x4x16x16xf32>, tensor<f32> -> tensor<2x4x16x16xf32>
  %x2 = whale.causal_mask %m : tensor<2x4x16x16xf32>
  %p = whale.softmax %x2 axis = -1 : tensor<2x4x16x16xf32>
  %o = whale.matmul %p, %v : tensor<2x4x16x16xf32>, tensor<2x4x16x8xf32> -> tensor<2x4x16x8xf32>
  %r = whale.transpose %o permutation = [0, 2, 1, 3] : tensor<2x4x16x8xf32> -> tensor<2x16x4x8xf32>
  return %r : tensor<2x16x4x8xf32>
}
