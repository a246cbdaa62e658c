func.func @never_waited() {
  %w = whale.param "m/w" zeros [] : tensor<4x4xf32>
  // expected-error @+1 {{must be ended by exactly one whale.gather_params_wait}}
  %p = whale.gather_params_start %w from [0] over "replicas" : tensor<4x4xf32>
  return
}
