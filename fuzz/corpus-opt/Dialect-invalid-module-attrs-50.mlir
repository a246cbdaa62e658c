module {
  func.func @m() attributes {whale.model, whale.train = {steps = 1, epochs = 2}} { return }
}
