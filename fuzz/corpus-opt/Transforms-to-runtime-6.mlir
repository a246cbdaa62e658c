func.func @linear(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>, %b: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) attributes {whale.model} {
  %y = whale.linear %x, %w, %b : tensor<4x8xf32>, tensor<8x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
  %h, %pre = whale.linear %y, %w, %b gelu : tensor<4x8xf32>, tensor<8x8xf32>, tensor<8xf32> -> tensor<4x8xf32>, tensor<4x8xf32>
  return %y, %h, %pre : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}
