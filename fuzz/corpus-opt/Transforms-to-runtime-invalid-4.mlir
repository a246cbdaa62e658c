func.func @silu_bf16(%x: tensor<4xbf16>) -> tensor<4xbf16> attributes {whale.model} {
  %y = whale.silu %x : tensor<4xbf16>
  return %y : tensor<4xbf16>
}
