func.func @other_types() {
  %w = whale.param "m/w" zeros [] : tensor<4x4xf32>
  %p = whale.gather_params_start %w from [0] over "replicas" : tensor<4x4xf32>
  // expected-error @+1 {{results must have the types of the parameters its whale.gather_params_start gathers}}
  %g = whale.gather_params_wait %p : tensor<4xf32>
  return
}
