func.func @concat_rank(%a: tensor<4x8xf32>, %b: tensor<4x8x1xf32>) {
  %0 = whale.concat %a, %b axis = 1 : tensor<4x8xf32>, tensor<4x8x1xf32> -> tensor<4x16xf32>
  return
}
