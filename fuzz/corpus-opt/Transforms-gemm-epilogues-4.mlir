func.func @weight_grad(%x: tensor<2x8x16xf32>, %w: tensor<32x16xf32>, %b: tensor<32xf32>, %dy: tensor<2x8x32xf32>, %z: tensor<2x8x32xf32>) -> (tensor<2x8x16xf32>, tensor<32x16xf32>, tensor<32xf32>) {
  %dz = whale.binary_grad add %z, %b, %dy operand = 0 : tensor<2x8x32xf32>, tensor<32xf32>, tensor<2x8x32xf32> -> tensor<2x8x32xf32>
  %db = whale.binary_grad add %z, %b, %dy operand = 1 : tensor<2x8x32xf32>, tensor<32xf32>, tensor<2x8x32xf32> -> tensor<32xf32>
  %dx = whale.matmul_grad %x, %w, %dz operand = 0 {transpose_rhs} : tensor<2x8x16xf32>, tensor<32x16xf32>, tensor<2x8x32xf32> -> tensor<2x8x16xf32>
  %dw = whale.matmul_grad %x, %w, %dz operand = 1 {transpose_rhs} : tensor<2x8x16xf32>, tensor<32x16xf32>, tensor<2x8x32xf32> -> tensor<32x16xf32>
  return %dx, %dw, %db : tensor<2x8x16xf32>, tensor<32x16xf32>, tensor<32xf32>
}
