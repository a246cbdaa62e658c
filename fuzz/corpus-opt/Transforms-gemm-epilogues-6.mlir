func.func @not_gradients(%x: tensor<8x16xf32>, %xt: tensor<16x8xf32>, %w: tensor<16x32xf32>, %b: tensor<32xf32>, %z: tensor<8x32xf32>, %dy: tensor<8x32xf32>, %other: tensor<8x32xf32>, %pre: tensor<8x16xf32>, %w2: tensor<16x32xbf16>, %xb: tensor<8x16xbf16>, %dyb: tensor<8x32xbf16>, %zb: tensor<8x32xbf16>, %bb: tensor<32xbf16>) -> (tensor<32xf32>, tensor<16x32xf32>, tensor<16x32xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<32xbf16>, tensor<16x32xf32>) {
  %db = whale.binary_grad add %z, %b, %other operand = 1 : tensor<8x32xf32>, tensor<32xf32>, tensor<8x32xf32> -> tensor<32xf32>
  %dbb = whale.binary_grad add %zb, %bb, %dyb operand = 1 : tensor<8x32xbf16>, tensor<32xbf16>, tensor<8x32xbf16> -> tensor<32xbf16>
  %dw = whale.matmul_grad %x, %w, %dy operand = 1 : tensor<8x16xf32>, tensor<16x32xf32>, tensor<8x32xf32> -> tensor<16x32xf32>
  %dwt = whale.matmul_grad %xt, %w, %other operand = 1 {transpose_lhs} : tensor<16x8xf32>, tensor<16x32xf32>, tensor<8x32xf32> -> tensor<16x32xf32>
  %dh = whale.matmul_grad %x, %w, %dy operand = 0 : tensor<8x16xf32>, tensor<16x32xf32>, tensor<8x32xf32> -> tensor<8x16xf32>
  %dpre = whale.unary_grad gelu %pre, %x, %dh : tensor<8x16xf32>
  %dt = whale.unary_grad tanh %pre, %x, %dh : tensor<8x16xf32>
  %dwb = whale.matmul_grad %xb, %w2, %dyb operand = 1 : tensor<8x16xbf16>, tensor<16x32xbf16>, tensor<8x32xbf16> -> tensor<16x32xf32>
  return %db, %dw, %dwt, %dh, %dpre, %dt, %dbb, %dwb : tensor<32xf32>, tensor<16x32xf32>, tensor<16x32xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<32xbf16>, tensor<16x32xf32>
}
