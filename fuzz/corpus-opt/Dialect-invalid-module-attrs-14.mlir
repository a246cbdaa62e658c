func.func private @f() attributes {schedule = #whale.schedule<F0 X0>}
