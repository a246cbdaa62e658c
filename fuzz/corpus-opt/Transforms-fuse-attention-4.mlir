func.func @heads_full(%x: tensor<2x3x5x2x8xf32>, %y: tensor<2x3x9x2x8xf32>, %z: tensor<2x3x9x2x8xf32>) -> tensor<2x3x5x2x8xf32> {
  %q = whale.transpose %x permutation = [0, 1, 3, 2, 4] : tensor<2x3x5x2x8xf32> -> tensor<2x3x2x5x8xf32>
  %k = whale.transpose %y permutation = [0, 1, 3, 2, 4] : tensor<2x3x9x2x8xf32> -> tensor<2x3x2x9x8xf32>
  %v = whale.transpose %z permutation = [0, 1, 3, 2, 4] : tensor<2x3x9x2x8xf32> -> tensor<2x3x2x9x8xf32>
  %s = whale.matmul %q, %k {transpose_rhs} : tensor<2x3x2x5x8xf32>, tensor<2x3x2x9x8xf32> -> tensor<2x3x2x5x9xf32>
  %p = whale.softmax %s axis = -1 : tensor<2x3x2x5x9xf32>
  %o = whale.matmul %p, %v : tensor<2x3x2x5x9xf32>, tensor<2x3x2x9x8xf32> -> tensor<2x3x2x5x8xf32>
  %r = whale.transpose %o permutation = [0, 1, 3, 2, 4] : tensor<2x3x2x5x8xf32> -> tensor<2x3x5x2x8xf32>
  return %r : tensor<2x3x5x2x8xf32>
}
