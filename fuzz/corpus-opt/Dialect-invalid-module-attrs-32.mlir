module {
  func.func @m() attributes {whale.model, whale.plan = {grad_weight = 1 : i64}} { return }
}
