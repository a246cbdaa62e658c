func.func @f() attributes {whale.train = 1} { return }
