module {
  func.func @m() attributes {whale.model, whale.plan = {stages = 2 : i32}} { return }
}
