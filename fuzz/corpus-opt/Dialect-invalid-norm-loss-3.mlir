func.func @ln_beta(%x: tensor<8x16xf32>, %g: tensor<16xf32>, %b: tensor<4xf32>) {
  %0 = whale.layernorm %x, %g, %b eps = 1.0e-5 : tensor<8x16xf32>, tensor<16xf32>, tensor<4xf32>
  return
}
