func.func @binary(%a: tensor<8x16xf32>, %b: tensor<16xf32>, %c: tensor<8x1xf32>, %d: tensor<1x16xf32>, %i: tensor<4xi32>) {
  %0 = whale.add %a, %b : tensor<8x16xf32>, tensor<16xf32> -> tensor<8x16xf32>
  %1 = whale.sub %c, %d : tensor<8x1xf32>, tensor<1x16xf32> -> tensor<8x16xf32>
  %s = whale.constant 5.000000e-01 : tensor<f32>
  %2 = whale.mul %a, %s : tensor<8x16xf32>, tensor<f32> -> tensor<8x16xf32>
  %3 = whale.div %i, %i : tensor<4xi32>, tensor<4xi32> -> tensor<4xi32>
  return
}

func.func @unary(%x: tensor<4x4xf32>, %s: tensor<2x4x4xf32>) {
  %0 = whale.neg %x : tensor<4x4xf32>
  %1 = whale.relu %x : tensor<4x4xf32>
  %2 = whale.gelu %x : tensor<4x4xf32>
  %3 = whale.tanh %x : tensor<4x4xf32>
  %4 = whale.exp %x : tensor<4x4xf32>
  %5 = whale.log %x : tensor<4x4xf32>
  %6 = whale.sqrt %x : tensor<4x4xf32>
  %7 = whale.causal_mask %s : tensor<2x4x4xf32>
  return
}

func.func @constants() {
  %0 = whale.constant 1.0 : tensor<f32>
  %1 = whale.constant 3.0 : tensor<i32>
  return
}
