func.func @layernorm_grad_residual_type(%x: tensor<8x16xf32>, %g: tensor<16xf32>, %dy: tensor<8x16xf32>, %r: tensor<4x16xf32>) -> tensor<8x16xf32> {
  %dx, %dg, %db = whale.layernorm_grad %x, %g, %dy plus %r eps = 1.000000e-05 : tensor<8x16xf32>, tensor<16xf32>, tensor<4x16xf32>
  return %dx : tensor<8x16xf32>
}
