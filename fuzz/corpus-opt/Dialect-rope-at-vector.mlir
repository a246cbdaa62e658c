func.func @at_vector(%q: tensor<2x4x1x8xf32>, %p: tensor<1xi32>) {
  %a = "whale.rope"(%q, %p) <{theta = 1.0e4 : f64}> : (tensor<2x4x1x8xf32>, tensor<1xi32>) -> tensor<2x4x1x8xf32>
  return
}
