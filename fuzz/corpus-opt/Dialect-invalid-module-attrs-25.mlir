module attributes {whale.config = #whale.settings<virtual_stages = 0>} {}
