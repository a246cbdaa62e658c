func.func @no_inputs() {
  %r = "whale.fused"() ({
  ^bb0:
    %c = "test.make"() : () -> tensor<4xf32>
    whale.fused_yield %c : tensor<4xf32>
  }) : () -> tensor<4xf32>
  return
}
