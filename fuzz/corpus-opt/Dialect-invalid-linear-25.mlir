func.func @rounded_loss_grad_dloss(%l: tensor<8x100xbf16>, %y: tensor<8xi32>, %d: tensor<8xbf16>) {
  %g, %db = whale.rounded_cross_entropy_grad %l, %y, %d : tensor<8x100xbf16>, tensor<8xi32>, tensor<8xbf16> -> tensor<8x100xbf16>, tensor<100xf32>
  return
}
