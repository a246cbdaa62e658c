func.func @concat_empty() {
  %0 = "whale.concat"() <{axis = 0 : i64}> : () -> tensor<4xf32>
  return
}
