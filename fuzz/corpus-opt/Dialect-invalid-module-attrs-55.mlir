module {
  func.func @m() attributes {whale.model, whale.train = {steps = 1, data = {kind = "text", path = "", seq = 4, batch = 2}}} { return }
}
