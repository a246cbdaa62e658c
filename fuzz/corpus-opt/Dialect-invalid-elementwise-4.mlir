func.func @unary_types(%a: tensor<8xf32>) {
  %0 = "whale.relu"(%a) : (tensor<8xf32>) -> tensor<4xf32>
  return
}
