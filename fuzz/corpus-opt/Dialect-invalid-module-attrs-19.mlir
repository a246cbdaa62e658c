func.func @f() attributes {whale.train = {steps = 0}} { return }
