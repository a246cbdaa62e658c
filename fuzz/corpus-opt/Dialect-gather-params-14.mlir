func.func @broadcast_owned() {
  %w = whale.param "m/w" zeros [] {group = "replicas", owner = 1 : i64} : tensor<4x4xf32>
  // expected-error @+1 {{hands on 'm/w', which its owner alone keeps: it is gathered where read}}
  whale.broadcast %w from [1] over "replicas" : tensor<4x4xf32>
  return
}
