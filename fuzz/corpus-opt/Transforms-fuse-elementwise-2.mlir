func.func @read_between(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %e = whale.exp %x : tensor<4x4xf32>
  %m = whale.matmul %e, %e : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  %p = whale.mul %e, %m : tensor<4x4xf32>, tensor<4x4xf32> -> tensor<4x4xf32>
  %n = whale.neg %p : tensor<4x4xf32>
  return %n : tensor<4x4xf32>
}
