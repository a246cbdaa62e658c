func.func @positions_layernorm(%x: tensor<2x8x16xf32>, %p: tensor<8x16xf32>, %g: tensor<16xf32>) -> tensor<2x8x16xf32> {
  %s = whale.add %x, %p : tensor<2x8x16xf32>, tensor<8x16xf32> -> tensor<2x8x16xf32>
  %n = whale.layernorm %s, %g, %g eps = 1.0e-5 : tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>
  return %n : tensor<2x8x16xf32>
}
