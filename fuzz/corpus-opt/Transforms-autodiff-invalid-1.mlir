func.func @two(%x: tensor<f32>) -> (tensor<f32>, tensor<f32>) attributes {whale.model} {
  return %x, %x : tensor<f32>, tensor<f32>
}
