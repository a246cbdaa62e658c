func.func @second(%x: tensor<4xf32>) -> tensor<f32> attributes {whale.model} {
  %p = whale.param "p" ones [] : tensor<4xf32>
  %y = whale.relu %p : tensor<4xf32>
  %g = whale.unary_grad relu %p, %y, %x : tensor<4xf32>
  %s = whale.reduce_sum %g axes = [0] : tensor<4xf32> -> tensor<f32>
  return %s : tensor<f32>
}
