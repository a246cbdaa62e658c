func.func private @f() attributes {schedule = #whale.schedule<F0 F0.1 B0>}
