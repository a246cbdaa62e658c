func.func @bf16_param() -> tensor<4xbf16> attributes {whale.model} {
  %p = whale.param "p" zeros [] : tensor<4xbf16>
  return %p : tensor<4xbf16>
}
