func.func @ln_beta_type(%x: tensor<8x16xf32>, %g: tensor<16xf32>, %b: tensor<16xf16>) {
  %0 = whale.layernorm %x, %g, %b eps = 1.0e-5 : tensor<8x16xf32>, tensor<16xf32>, tensor<16xf16>
  return
}
