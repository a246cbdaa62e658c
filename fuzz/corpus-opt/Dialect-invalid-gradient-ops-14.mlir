func.func @ln_gamma(%x: tensor<8x4xf32>, %g: tensor<5xf32>) {
  %0:3 = whale.layernorm_grad %x, %g, %x eps = 1.0e-5 : tensor<8x4xf32>, tensor<5xf32>
  return
}
