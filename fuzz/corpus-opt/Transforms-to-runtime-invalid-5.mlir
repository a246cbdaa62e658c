func.func @foreign(%x: tensor<4xf32>) -> tensor<4xf32> attributes {whale.model} {
  %y = scf.execute_region -> tensor<4xf32> {
    scf.yield %x : tensor<4xf32>
  }
  return %y : tensor<4xf32>
}
