# The installed package as a host sees it: `cmake --install` into a fresh
# prefix, then the hosts of examples/embed built against it twice, through
# find_package(Whale) and through pkg-config, and run.
#
#   cmake -DBUILD=... -DSOURCE=... -DWORK=... -P InstalledPackage.cmake
foreach(var BUILD SOURCE WORK)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "${var} is not set")
  endif()
endforeach()

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                  ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  set(out "${out}" PARENT_SCOPE)
endfunction()

function(expect text)
  string(FIND "${out}" "${text}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "expected '${text}' in:\n${out}")
  endif()
endfunction()

file(REMOVE_RECURSE ${WORK})
set(prefix ${WORK}/prefix)
run(${CMAKE_COMMAND} --install ${BUILD} --prefix ${prefix})
foreach(f include/whale/whale.h include/whale/Job.h lib/libwhale.so
          lib/cmake/Whale/WhaleConfig.cmake lib/pkgconfig/whale.pc
          share/whale/stdlib/nn.whl share/bash-completion/completions/whale)
  if(NOT EXISTS ${prefix}/${f})
    message(FATAL_ERROR "the install lacks ${f}")
  endif()
endforeach()

# find_package(Whale): the C and the C++ host.
run(${CMAKE_COMMAND} -S ${SOURCE}/examples/embed -B ${WORK}/hosts -G Ninja
    -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=Release)
run(${CMAKE_COMMAND} --build ${WORK}/hosts)
run(${WORK}/hosts/host-c ${WORK}/host-c.safetensors)
expect("plan on cpu:2: 2 replicas")
expect("(falls)")
expect("step 31 after resuming: the same loss")
run(${WORK}/hosts/host-cpp ${SOURCE}/examples/mlp.whl)
expect("(falls), 100 steps done")

# pkg-config: a C compiler and the flags the package gives.
set(ENV{PKG_CONFIG_PATH} ${prefix}/lib/pkgconfig)
run(pkg-config --cflags --libs whale)
string(STRIP "${out}" flags)
separate_arguments(flags UNIX_COMMAND "${flags}")
run(cc ${SOURCE}/examples/embed/host.c ${flags} -o ${WORK}/host-pkg-config)
run(${WORK}/host-pkg-config ${WORK}/host-pc.safetensors)
expect("step 31 after resuming: the same loss")
message(STATUS "the installed package builds and runs both hosts")
