module {
  func.func @m() attributes {whale.model, whale.plan = {stage = 1 : i64}} { return }
}
