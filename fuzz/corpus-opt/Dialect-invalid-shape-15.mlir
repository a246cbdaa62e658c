func.func @concat_types(%a: tensor<4x8xf32>, %b: tensor<4x8xf16>) {
  %0 = whale.concat %a, %b axis = 1 : tensor<4x8xf32>, tensor<4x8xf16> -> tensor<4x16xf32>
  return
}
