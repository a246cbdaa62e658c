func.func @rounding_too_wide(%x: tensor<2x8200xf32>) -> tensor<2x8200xbf16> {
  %e = whale.exp %x : tensor<2x8200xf32>
  %p = whale.softmax %e axis = -1 : tensor<2x8200xf32>
  %r = whale.cast %p : tensor<2x8200xf32> to tensor<2x8200xbf16>
  return %r : tensor<2x8200xbf16>
}
