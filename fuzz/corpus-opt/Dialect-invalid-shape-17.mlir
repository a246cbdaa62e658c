func.func @concat_result_type(%a: tensor<4x8xf32>) {
  %0 = whale.concat %a, %a axis = 1 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x16xf16>
  return
}
