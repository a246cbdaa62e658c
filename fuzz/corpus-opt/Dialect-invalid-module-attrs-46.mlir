module {
  func.func @m() attributes {whale.model, whale.plan = {stages = -1 : i64}} { return }
}
