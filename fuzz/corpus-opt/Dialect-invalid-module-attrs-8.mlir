module attributes {whale.config = #whale.settings<grad_sync = "later">} {}
