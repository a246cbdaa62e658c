func.func @m(%x: tensor<f32>) -> tensor<f32> attributes {whale.model, whale.train = {optimizer = {kind = "sgd", lr = 0.1}, steps = 1}} {
  return %x : tensor<f32>
}
