func.func @many_operands(%a0: tensor<64xf32>, %a1: tensor<64xf32>, %a2: tensor<64xf32>, %a3: tensor<64xf32>, %a4: tensor<64xf32>, %a5: tensor<64xf32>, %a6: tensor<64xf32>, %a7: tensor<64xf32>, %a8: tensor<64xf32>, %a9: tensor<64xf32>, %a10: tensor<64xf32>, %a11: tensor<64xf32>, %a12: tensor<64xf32>, %a13: tensor<64xf32>, %a14: tensor<64xf32>, %a15: tensor<64xf32>, %a16: tensor<64xf32>) -> tensor<64xf32> {
  %s1 = whale.add %a0, %a1 : tensor<64xf32>, tensor<64xf32> -> tensor<64xf32>
  %s2 = whale.add %s1, %a2 : tensor<64xf32>, tensor<64xf32> -> tensor<64xf32>
  %s3 = whale.add %s2, %a3 : tensor<64xf32>, tensor<64xf32> -> tensor<64xf32>
  %s4 = whale.add %s3, %a4 : tensor<64xf32>, tensor<64xf32> -> tensor<64xf32>
  %s5 = whale.add %s4, %a5 : tensor<64xf32>, tensor<64xf32> -> tensor<64xf32>
  %s6 = whale.add %s5, %a6 : tensor<64xf32>, tensor<64xf32> -> tensor<64xf32>
  %s7 = whale.add %s6, %a7 : tensor<64xf32>, tensor<64xf32> -> tensor<64xf32>
  %s8 = whale.add %s7, %a8 : tensor<64xf32>, tensor<64xf32> -> tensor<64xf32>
  %s9 = whale.add %s8, %a9 : tensor<64xf32>, tensor<64xf32> -> tensor<64xf32>
  %s10 = whale.add %s9, %a10 : tensor<64xf32>, tensor<64xf32> -> tensor<64xf32>
  %s11 = whale.add %s10, %a11 : tensor<64xf32>, tensor<64xf32> -> tensor<64xf32>
  %s12 = whale.add %s11, %a12 : tensor<64xf32>, tensor<64xf32> -> tensor<64xf32>
  %s13 = whale.add %s12, %a13 : tensor<64xf32>, tensor<64xf32> -> tensor<64xf32>
  %s14 = whale.add %s13, %a14 : tensor<64xf32>, tensor<64xf32> -> tensor<64xf32>
  %s15 = whale.add %s14, %a15 : tensor<64xf32>, tensor<64xf32> -> tensor<64xf32>
  %s16 = whale.add %s15, %a16 : tensor<64xf32>, tensor<64xf32> -> tensor<64xf32>
  return %s16 : tensor<64xf32>
}
