module {
  func.func @m() attributes {whale.model, whale.train = {steps = 1, optimizer = {kind = "sgd", lr = -0.1}}} { return }
}
