module {
  func.func @m() attributes {whale.model, whale.plan = {micro_batches = 1099511627776 : i64}} { return }
}
