func.func @layernorm_residual(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %dy: tensor<4x8xf32>, %r: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) attributes {whale.model} {
  %dx, %dg, %db = whale.layernorm_grad %x, %g, %dy plus %r eps = 1.000000e-05 : tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>
  return %dx, %dg, %db : tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>
}
