func.func @n(%x: tensor<f32>) -> tensor<f32> attributes {whale.model, whale.train = {optimizer = {kind = "lamb"}, steps = 1}} {
  return %x : tensor<f32>
}
func.func @n_grad(%x: tensor<f32>) -> tensor<f32> attributes {whale.model, whale.gradients = []} {
  return %x : tensor<f32>
}
