func.func @concat_axis(%a: tensor<4x8xf32>) {
  %0 = whale.concat %a, %a axis = 2 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x16xf32>
  return
}
