func.func @linear_grads(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %dy: tensor<4x16xf32>) -> (tensor<16x8xf32>, tensor<16xf32>, tensor<4x8xf32>) attributes {whale.model} {
  %dw, %db = whale.linear_weight_grad %x, %dy {transpose_weight} : tensor<4x8xf32>, tensor<4x16xf32> -> tensor<16x8xf32>, tensor<16xf32>
  %dpre = whale.gelu_matmul_grad %x, %w, %dy {transpose_weight} : tensor<4x8xf32>, tensor<16x8xf32>, tensor<4x16xf32> -> tensor<4x8xf32>
  return %dw, %db, %dpre : tensor<16x8xf32>, tensor<16xf32>, tensor<4x8xf32>
}
