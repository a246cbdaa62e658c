func.func @ln_gamma_type(%x: tensor<8x16xf32>, %g: tensor<16xbf16>, %b: tensor<16xf32>) {
  %0 = whale.layernorm %x, %g, %b eps = 1.0e-5 : tensor<8x16xf32>, tensor<16xbf16>, tensor<16xf32>
  return
}
