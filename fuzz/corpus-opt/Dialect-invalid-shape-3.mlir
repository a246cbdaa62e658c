func.func @perm_repeat(%x: tensor<8x16xf32>) {
  %0 = whale.transpose %x permutation = [1, 1] : tensor<8x16xf32> -> tensor<16x16xf32>
  return
}
