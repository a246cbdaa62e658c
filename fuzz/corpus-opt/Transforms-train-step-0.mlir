func.func @m(%x: tensor<4x3xf32>) -> tensor<f32> attributes {whale.model, whale.train = {optimizer = {kind = "adamw", lr = 0.02, beta1 = 0.9, beta2 = 0.999, eps = 1.0e-8, weight_decay = 0.1}, clip_grad_norm = 0.5, steps = 10}} {
  %w = whale.param "m/w" normal [0.0, 0.02] : tensor<3x2xf32>
  %y = whale.matmul %x, %w : tensor<4x3xf32>, tensor<3x2xf32> -> tensor<4x2xf32>
  %l = whale.reduce_mean %y axes = [0, 1] : tensor<4x2xf32> -> tensor<f32>
  return %l : tensor<f32>
}
