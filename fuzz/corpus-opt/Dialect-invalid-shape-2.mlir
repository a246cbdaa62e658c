func.func @perm_size(%x: tensor<8x16xf32>) {
  %0 = whale.transpose %x permutation = [0, 1, 2] : tensor<8x16xf32> -> tensor<8x16xf32>
  return
}
