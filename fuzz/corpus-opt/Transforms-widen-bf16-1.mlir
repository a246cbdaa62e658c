func.func @kept(%a: tensor<4x8xbf16>, %b: tensor<8x8xbf16>) -> tensor<4x4xbf16> {
  %m = whale.matmul %a, %b : tensor<4x8xbf16>, tensor<8x8xbf16> -> tensor<4x8xbf16>
  %t = whale.tanh %m : tensor<4x8xbf16>
  %p = whale.matmul %t, %m {transpose_rhs} : tensor<4x8xbf16>, tensor<4x8xbf16> -> tensor<4x4xbf16>
  return %p : tensor<4x4xbf16>
}
