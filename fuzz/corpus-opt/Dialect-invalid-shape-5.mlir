func.func @perm_type(%x: tensor<8x16xf32>) {
  %0 = whale.transpose %x permutation = [1, 0] : tensor<8x16xf32> -> tensor<16x8xf16>
  return
}
