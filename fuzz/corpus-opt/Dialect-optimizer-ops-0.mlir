func.func @updates(%dw: tensor<4x2xf32>, %db: tensor<2xf32>) {
  %w = whale.param "w" zeros [] : tensor<4x2xf32>
  %b = whale.param "b" zeros [] : tensor<2xf32>
  %c:2 = whale.clip_grad_norm %dw, %db max_norm = 1.0 : tensor<4x2xf32>, tensor<2xf32> -> tensor<4x2xf32>, tensor<2xf32>
  whale.sgd_update %w, %c#0 {lr = 0.1 : f64, momentum = 0.9 : f64, weight_decay = 0.0 : f64} : tensor<4x2xf32>
  whale.adam_update %b, %c#1 {lr = 0.001 : f64, beta1 = 0.9 : f64, beta2 = 0.999 : f64, eps = 1.0e-8 : f64, weight_decay = 0.01 : f64, decoupled} : tensor<2xf32>
  return
}
