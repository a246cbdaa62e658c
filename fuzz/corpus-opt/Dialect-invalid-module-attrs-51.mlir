module {
  func.func @m() attributes {whale.model, whale.train = {steps = 1, data = {kind = "synthetic"}}} { return }
}
