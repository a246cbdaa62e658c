module attributes {whale.config = #whale.settings<gather_layers = 2>} {}
