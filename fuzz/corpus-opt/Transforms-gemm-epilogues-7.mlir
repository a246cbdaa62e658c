func.func @residual(%x: tensor<8x16xf32>, %g: tensor<16xf32>, %dy: tensor<8x16xf32>, %r: tensor<8x16xf32>) -> (tensor<8x16xf32>, tensor<16xf32>, tensor<16xf32>) {
  %dx, %dg, %db = whale.layernorm_grad %x, %g, %dy eps = 1.000000e-05 : tensor<8x16xf32>, tensor<16xf32>
  %s = whale.add %r, %dx : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
  %dx2, %dg2, %db2 = whale.layernorm_grad %x, %g, %dy eps = 1.000000e-05 : tensor<8x16xf32>, tensor<16xf32>
  %s2 = whale.add %dx2, %s : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
  return %s2, %dg, %db : tensor<8x16xf32>, tensor<16xf32>, tensor<16xf32>
}
