func.func @row_rounding_read_inside(%x: tensor<4x4xf32>) {
  %r = whale.fused(%x) : (tensor<4x4xf32>) -> (tensor<4x4xbf16>) {
  ^bb0(%a: tensor<4x4xf32>):
    %s = whale.softmax %a axis = 1 : tensor<4x4xf32>
    %h = whale.cast %s : tensor<4x4xf32> to tensor<4x4xbf16>
    %w = whale.cast %h : tensor<4x4xbf16> to tensor<4x4xf32>
    %n = whale.neg %w : tensor<4x4xf32>
    %o = whale.cast %n : tensor<4x4xf32> to tensor<4x4xbf16>
    whale.fused_yield %o : tensor<4x4xbf16>
  }
  return
}
