func.func @not_fused(%x: tensor<8x16xf32>, %b: tensor<16xf32>, %d: tensor<4xf64>) -> (tensor<16xf32>, tensor<4xf64>, tensor<8x16xf32>, tensor<8xf32>) {
  %r = whale.relu %x : tensor<8x16xf32>
  %db = whale.binary_grad add %x, %b, %x operand = 1 : tensor<8x16xf32>, tensor<16xf32>, tensor<8x16xf32> -> tensor<16xf32>
  %rs = whale.reduce_sum %x axes = [1] : tensor<8x16xf32> -> tensor<8xf32>
  %s = whale.add %db, %b : tensor<16xf32>, tensor<16xf32> -> tensor<16xf32>
  %e = whale.add %d, %d : tensor<4xf64>, tensor<4xf64> -> tensor<4xf64>
  %sm = whale.softmax %r axis = 1 : tensor<8x16xf32>
  return %s, %e, %sm, %rs : tensor<16xf32>, tensor<4xf64>, tensor<8x16xf32>, tensor<8xf32>
}
