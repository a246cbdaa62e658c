func.func @kept(%q: tensor<4x8xf32>, %k: tensor<4x8xf32>, %v: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x4xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %s = whale.matmul %q, %k {transpose_rhs} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x4xf32>
  %p = whale.softmax %s axis = 1 : tensor<4x4xf32>
  %o = whale.matmul %p, %v : tensor<4x4xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %s2 = whale.matmul %q, %k {transpose_rhs} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x4xf32>
  %p2 = whale.softmax %s2 axis = 0 : tensor<4x4xf32>
  %o2 = whale.matmul %p2, %v : tensor<4x4xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %kt = whale.transpose %k permutation = [1, 0] : tensor<4x8xf32> -> tensor<8x4xf32>
  %s3 = whale.matmul %q, %kt : tensor<4x8xf32>, tensor<8x4xf32> -> tensor<4x4xf32>
  %p3 = whale.softmax %s3 axis = 1 : tensor<4x4xf32>
  %o3 = whale.matmul %p3, %v : tensor<4x4xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  return %o, %p, %o2, %o3 : tensor<4x8xf32>, tensor<4x4xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}
