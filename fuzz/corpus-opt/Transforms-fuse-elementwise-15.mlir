func.func @rows_or_sums(%x: tensor<8x16xf32>, %g: tensor<16xf32>) -> (tensor<8x16xf32>, tensor<16xf32>) {
  %e = whale.exp %x : tensor<8x16xf32>
  %n = whale.layernorm %e, %g, %g eps = 1.0e-5 : tensor<8x16xf32>, tensor<16xf32>, tensor<16xf32>
  %db = whale.binary_grad add %x, %g, %e operand = 1 : tensor<8x16xf32>, tensor<16xf32>, tensor<8x16xf32> -> tensor<16xf32>
  return %n, %db : tensor<8x16xf32>, tensor<16xf32>
}
