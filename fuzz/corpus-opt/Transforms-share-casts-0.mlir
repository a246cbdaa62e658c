func.func @micro_batches(%w: tensor<16x32xf32>, %x1: tensor<8x16xbf16>, %x2: tensor<8x16xbf16>, %other: tensor<16x32xf32>) -> (tensor<8x32xbf16>, tensor<8x32xbf16>, tensor<16x32xbf16>) {
  %w1 = whale.cast %w : tensor<16x32xf32> to tensor<16x32xbf16>
  %y1 = whale.matmul %x1, %w1 : tensor<8x16xbf16>, tensor<16x32xbf16> -> tensor<8x32xbf16>
  %w2 = whale.cast %w : tensor<16x32xf32> to tensor<16x32xbf16>
  %y2 = whale.matmul %x2, %w2 : tensor<8x16xbf16>, tensor<16x32xbf16> -> tensor<8x32xbf16>
  %o = whale.cast %other : tensor<16x32xf32> to tensor<16x32xbf16>
  return %y1, %y2, %o : tensor<8x32xbf16>, tensor<8x32xbf16>, tensor<16x32xbf16>
}
