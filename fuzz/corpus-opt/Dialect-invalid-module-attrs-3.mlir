module attributes {whale.config = #whale.settings<auto_parallel = 1>} {}
