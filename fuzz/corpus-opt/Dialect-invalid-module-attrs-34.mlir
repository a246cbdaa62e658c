module {
  func.func @m() attributes {whale.model, whale.plan = {balance = 1}} { return }
}
