func.func @residual_layernorm(%x: tensor<8x16xf32>, %h: tensor<8x16xf32>, %g: tensor<16xf32>, %b: tensor<16xf32>) -> (tensor<8x16xf32>, tensor<8x16xf32>) {
  %s = whale.add %x, %h : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
  %n = whale.layernorm %s, %g, %b eps = 1.0e-5 : tensor<8x16xf32>, tensor<16xf32>, tensor<16xf32>
  return %s, %n : tensor<8x16xf32>, tensor<8x16xf32>
}
