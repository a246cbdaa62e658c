module {
  func.func @m() attributes {whale.model, whale.train = {steps = 1, save_every = 0}} { return }
}
