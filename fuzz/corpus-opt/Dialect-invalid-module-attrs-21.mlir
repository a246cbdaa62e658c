func.func @m(%x: tensor<2xf32>) attributes {whale.inputs = ["x", "y"]} {
  return
}
