func.func @perm_result(%x: tensor<8x16xf32>) {
  %0 = whale.transpose %x permutation = [1, 0] : tensor<8x16xf32> -> tensor<8x16xf32>
  return
}
