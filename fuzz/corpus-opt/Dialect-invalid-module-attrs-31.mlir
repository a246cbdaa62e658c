module {
  func.func @m() attributes {whale.model, whale.plan = {grid = [0, 1]}} { return }
}
