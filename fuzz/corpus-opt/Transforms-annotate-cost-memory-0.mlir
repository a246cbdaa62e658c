func.func @traffic(%t: tensor<1000x64xf32>, %ids: tensor<4x8xi32>, %x: tensor<8x16xf32>) {
  %p = whale.param "p" zeros [] : tensor<1000x64xf32>
  %e = whale.embedding %t[%ids] : tensor<1000x64xf32>, tensor<4x8xi32> -> tensor<4x8x64xf32>
  %r = whale.reshape %x : tensor<8x16xf32> -> tensor<128xf32>
  %s = whale.slice %x axis = 1, start = 0, end = 4 : tensor<8x16xf32> -> tensor<8x4xf32>
  %h = whale.param "h" zeros [] : tensor<16xbf16>
  return
}
