func.func @grad(%x: tensor<8x4xf32>, %c: tensor<5xf32>, %dy: tensor<8x4xf32>) {
  %dx, %dg, %db = whale.batch_norm_grad %x, %c, %c, %c, %dy : tensor<8x4xf32>, tensor<5xf32>
  return
}
