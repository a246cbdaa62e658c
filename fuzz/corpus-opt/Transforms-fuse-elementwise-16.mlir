func.func @parameters_between(%x: tensor<8x16xf32>, %h: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %s = whale.add %x, %h : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
  %g = whale.param "m/gamma" ones [] : tensor<16xf32>
  %b = whale.param "m/beta" zeros [] : tensor<16xf32>
  %n = whale.layernorm %s, %g, %b eps = 1.0e-5 : tensor<8x16xf32>, tensor<16xf32>, tensor<16xf32>
  return %n : tensor<8x16xf32>
}
