func.func @both_ways(%x: tensor<8x16xf32>, %s: tensor<f32>) {
  %h = whale.cast %x : tensor<8x16xf32> to tensor<8x16xbf16>
  %f = whale.cast %h : tensor<8x16xbf16> to tensor<8x16xf32>
  %t = whale.cast %s : tensor<f32> to tensor<bf16>
  return
}

func.func @round_and_sum(%dy: tensor<2x8x32xf32>) {
  %r, %s = whale.round_and_sum %dy : tensor<2x8x32xf32> -> tensor<2x8x32xbf16>, tensor<32xf32>
  %r2, %s2 = whale.round_and_sum %dy : tensor<2x8x32xf32> -> tensor<2x8x32xbf16>, tensor<8x32xf32>
  return
}

func.func @rounded_loss_grad(%l: tensor<2x8x100xbf16>, %y: tensor<2x8xi32>, %d: tensor<2x8xf32>, %lf: tensor<8x100xf32>, %yl: tensor<8xi64>, %df: tensor<8xf32>) {
  %g, %db = whale.rounded_cross_entropy_grad %l, %y, %d : tensor<2x8x100xbf16>, tensor<2x8xi32>, tensor<2x8xf32> -> tensor<2x8x100xbf16>, tensor<100xf32>
  %g2, %db2 = whale.rounded_cross_entropy_grad %lf, %yl, %df : tensor<8x100xf32>, tensor<8xi64>, tensor<8xf32> -> tensor<8x100xbf16>, tensor<100xf32>
  return
}
