func.func @concat_dims(%a: tensor<4x8xf32>, %b: tensor<5x8xf32>) {
  %0 = whale.concat %a, %b axis = 1 : tensor<4x8xf32>, tensor<5x8xf32> -> tensor<4x16xf32>
  return
}
