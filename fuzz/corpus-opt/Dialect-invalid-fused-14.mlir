func.func @row_rounding_too_wide(%x: tensor<2x8193xf32>) {
  %r = whale.fused(%x) : (tensor<2x8193xf32>) -> (tensor<2x8193xbf16>) {
  ^bb0(%a: tensor<2x8193xf32>):
    %s = whale.softmax %a axis = 1 : tensor<2x8193xf32>
    %h = whale.cast %s : tensor<2x8193xf32> to tensor<2x8193xbf16>
    whale.fused_yield %h : tensor<2x8193xbf16>
  }
  return
}
