func.func @rounded_loss_grad(%l: tensor<4x16xbf16>, %y: tensor<4xi32>, %d: tensor<4xf32>) -> (tensor<4x16xbf16>, tensor<16xf32>) attributes {whale.model} {
  %g, %db = whale.rounded_cross_entropy_grad %l, %y, %d : tensor<4x16xbf16>, tensor<4xi32>, tensor<4xf32> -> tensor<4x16xbf16>, tensor<16xf32>
  return %g, %db : tensor<4x16xbf16>, tensor<16xf32>
}
