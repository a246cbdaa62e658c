func.func @rows_read_beside_their_rounding(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xbf16>) {
  %e = whale.exp %x : tensor<4x8xf32>
  %p = whale.softmax %e axis = -1 : tensor<4x8xf32>
  %r = whale.cast %p : tensor<4x8xf32> to tensor<4x8xbf16>
  return %p, %r : tensor<4x8xf32>, tensor<4x8xbf16>
}
