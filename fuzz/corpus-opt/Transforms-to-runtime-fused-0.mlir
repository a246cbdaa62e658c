func.func @m(%x: tensor<2x16x16xf32>, %b: tensor<16xf32>) -> (tensor<2x16x16xf32>, tensor<2x16x16xf32>) attributes {whale.model} {
  %r = whale.fused(%x, %b) : (tensor<2x16x16xf32>, tensor<16xf32>) -> (tensor<2x16x16xf32>) {
  ^bb0(%a: tensor<2x16x16xf32>, %c: tensor<16xf32>):
    %s = whale.add %a, %c : tensor<2x16x16xf32>, tensor<16xf32> -> tensor<2x16x16xf32>
    %g = whale.gelu %s : tensor<2x16x16xf32>
    whale.fused_yield %g : tensor<2x16x16xf32>
  }
  %r2 = whale.fused(%r, %b) : (tensor<2x16x16xf32>, tensor<16xf32>) -> (tensor<2x16x16xf32>) {
  ^bb0(%a: tensor<2x16x16xf32>, %c: tensor<16xf32>):
    %s = whale.add %a, %c : tensor<2x16x16xf32>, tensor<16xf32> -> tensor<2x16x16xf32>
    %g = whale.gelu %s : tensor<2x16x16xf32>
    whale.fused_yield %g : tensor<2x16x16xf32>
  }
  return %r, %r2 : tensor<2x16x16xf32>, tensor<2x16x16xf32>
}
