func.func @mean_of_all(%x: tensor<8x8xf32>) -> tensor<f32> attributes {whale.model} {
  %m = whale.fused(%x) : (tensor<8x8xf32>) -> (tensor<f32>) {
  ^bb0(%a: tensor<8x8xf32>):
    %q = whale.mul %a, %a : tensor<8x8xf32>, tensor<8x8xf32> -> tensor<8x8xf32>
    %s = whale.reduce_mean %q axes = [0, 1] : tensor<8x8xf32> -> tensor<f32>
    whale.fused_yield %s : tensor<f32>
  }
  return %m : tensor<f32>
}
