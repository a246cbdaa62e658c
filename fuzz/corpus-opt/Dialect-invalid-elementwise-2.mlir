func.func @result_dtype(%a: tensor<8xf32>) {
  %0 = whale.sub %a, %a : tensor<8xf32>, tensor<8xf32> -> tensor<8xbf16>
  return
}
