func.func @casts(%x: tensor<2x3xf32>) -> tensor<2x3xf32> attributes {whale.model} {
  %h = whale.cast %x : tensor<2x3xf32> to tensor<2x3xbf16>
  %f = whale.cast %h : tensor<2x3xbf16> to tensor<2x3xf32>
  return %f : tensor<2x3xf32>
}
