func.func @rounded_rows_end_the_chain(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %e = whale.exp %x : tensor<4x8xf32>
  %p = whale.softmax %e axis = -1 : tensor<4x8xf32>
  %r = whale.cast %p : tensor<4x8xf32> to tensor<4x8xbf16>
  %w = whale.cast %r : tensor<4x8xbf16> to tensor<4x8xf32>
  %n = whale.neg %w : tensor<4x8xf32>
  return %n : tensor<4x8xf32>
}
