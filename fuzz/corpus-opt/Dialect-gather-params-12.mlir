func.func @into_other_sums(%g: tensor<4xf32>, %s: tensor<2xf32>) {
  // expected-error @+1 {{needs one sum of each gradient's type, and results of the sums' types}}
  %r = whale.add_into_owners %g into %s to [0] over "replicas" : tensor<4xf32> into tensor<2xf32> -> tensor<2xf32>
  return
}
