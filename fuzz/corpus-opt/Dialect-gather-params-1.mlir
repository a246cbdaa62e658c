func.func @not_a_param(%x: tensor<4x4xf32>) {
  // expected-error @+1 {{gathers parameters: its operands must come from whale.param}}
  %g = whale.gather_params %x from [0] over "replicas" : tensor<4x4xf32>
  return
}
