func.func @s(%x: tensor<2xf32>) -> tensor<f32> attributes {whale.model, whale.train = {optimizer = {kind = "sgd", lr = 0.5}, steps = 1}} {
  %p = whale.param "p" ones [] : tensor<2xf32>
  %y = whale.mul %x, %p : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
  %l = whale.reduce_sum %y axes = [0] : tensor<2xf32> -> tensor<f32>
  return %l : tensor<f32>
}
