func.func @bias_gelu(%x: tensor<8x16xf32>, %b: tensor<16xf32>) -> tensor<8x16xf32> {
  %s = whale.add %x, %b : tensor<8x16xf32>, tensor<16xf32> -> tensor<8x16xf32>
  %g = whale.gelu %s : tensor<8x16xf32>
  return %g : tensor<8x16xf32>
}
