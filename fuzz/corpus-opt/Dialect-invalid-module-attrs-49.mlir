module {
  func.func @m() attributes {whale.model, whale.plan = {devices = 4 : i64, grid = array<i64: 0, 4>}} { return }
}
