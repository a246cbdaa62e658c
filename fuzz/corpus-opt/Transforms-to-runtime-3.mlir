func.func @reshapes(%x: tensor<2x3xf32>) -> (tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<2x3xf32>) attributes {whale.model} {
  %a = whale.reshape %x : tensor<2x3xf32> -> tensor<6xf32>
  %e = whale.exp %x : tensor<2x3xf32>
  %b = whale.reshape %e : tensor<2x3xf32> -> tensor<6xf32>
  %d = whale.add %e, %e : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  %n = whale.neg %x : tensor<2x3xf32>
  %c = whale.reshape %n : tensor<2x3xf32> -> tensor<6xf32>
  return %a, %b, %c, %d : tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<2x3xf32>
}
