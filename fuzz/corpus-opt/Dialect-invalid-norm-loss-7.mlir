func.func @ln_result(%x: tensor<8x16xf32>, %g: tensor<16xf32>) {
  %0 = "whale.layernorm"(%x, %g, %g) <{eps = 1.0e-5 : f64}> : (tensor<8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<16x8xf32>
  return
}
