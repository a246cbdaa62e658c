func.func @residual_kept(%x: tensor<8x16xf32>, %g: tensor<16xf32>, %dy: tensor<8x16xf32>, %r: tensor<8x16xf32>, %b: tensor<16xf32>) -> (tensor<8x16xf32>, tensor<16xf32>, tensor<8x16xf32>, tensor<8x16xf32>) {
  %dx, %dg, %db = whale.layernorm_grad %x, %g, %dy eps = 1.000000e-05 : tensor<8x16xf32>, tensor<16xf32>
  %dg2 = whale.add %dg, %db : tensor<16xf32>, tensor<16xf32> -> tensor<16xf32>
  %late = whale.neg %r : tensor<8x16xf32>
  %s = whale.add %late, %dx : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
  %dx2, %dg3, %db3 = whale.layernorm_grad %x, %g, %dy eps = 1.000000e-05 : tensor<8x16xf32>, tensor<16xf32>
  %s2 = whale.add %dx2, %b : tensor<8x16xf32>, tensor<16xf32> -> tensor<8x16xf32>
  return %s, %dg2, %s2, %dx2 : tensor<8x16xf32>, tensor<16xf32>, tensor<8x16xf32>, tensor<8x16xf32>
}
