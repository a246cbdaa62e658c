func.func @attention_sequence_major_rank(%q: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %o = whale.attention %q, %q, %q scale = 0.5 sequence_major : tensor<8x4xf32>, tensor<8x4xf32>
  return %o : tensor<8x4xf32>
}
