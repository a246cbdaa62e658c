func.func @full(%q: tensor<3x5x8xf32>, %k: tensor<3x9x8xf32>, %v: tensor<3x9x8xf32>) -> tensor<3x5x8xf32> {
  %s = whale.matmul %q, %k {transpose_rhs} : tensor<3x5x8xf32>, tensor<3x9x8xf32> -> tensor<3x5x9xf32>
  %c = whale.constant 4.000000e+00 : tensor<f32>
  %m = whale.div %s, %c : tensor<3x5x9xf32>, tensor<f32> -> tensor<3x5x9xf32>
  %p = whale.softmax %m axis = 2 : tensor<3x5x9xf32>
  %o = whale.matmul %p, %v : tensor<3x5x9xf32>, tensor<3x9x8xf32> -> tensor<3x5x8xf32>
  return %o : tensor<3x5x8xf32>
}
