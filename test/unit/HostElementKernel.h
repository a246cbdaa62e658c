//===- HostElementKernel.h - a generated element kernel built for the host -*-
// C++ -*-===//
//
// The source ElementKernelSource.h writes is plain C++ outside a CUDA
// compiler: built with the host's compiler (the one CMake names) into a
// shared object, its kernel runs on the CPU, so the tests check what the
// GPU compiles against the interpreter without a GPU. Each distinct source
// is built once per process.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_TEST_UNIT_HOSTELEMENTKERNEL_H
#define WHALE_TEST_UNIT_HOSTELEMENTKERNEL_H

#include "runtime/cuda/ElementKernelSource.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>

namespace whale::testing {

/// The kernel's parameter block, as the prelude's WhaleOperands.
struct HostOperands {
  const void *data[16];
};
using HostElementKernel = void (*)(HostOperands, long long, float *);

/// `source`'s whale_element built for the host; null with `why`.
inline HostElementKernel buildHostElementKernel(const std::string &source,
                                                std::string &why) {
  static std::map<std::string, HostElementKernel> built;
  if (auto it = built.find(source); it != built.end())
    return it->second;
  char dir[] = "/tmp/whale-element-XXXXXX";
  if (!mkdtemp(dir)) {
    why = "no temporary folder";
    return nullptr;
  }
  const std::string src = std::string(dir) + "/kernel.cpp",
                    lib = std::string(dir) + "/kernel.so",
                    log = std::string(dir) + "/log.txt";
  std::ofstream(src) << source;
  const std::string command = std::string(WHALE_HOST_CXX) +
                              " -O1 -shared -fPIC -o " + lib + " " + src +
                              " > " + log + " 2>&1";
  if (std::system(command.c_str()) != 0) {
    std::ifstream in(log);
    why = "the host compiler refused a generated kernel: " +
          std::string(std::istreambuf_iterator<char>(in), {});
    return nullptr;
  }
  void *handle = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
  std::remove(src.c_str());
  std::remove(lib.c_str());
  std::remove(log.c_str());
  rmdir(dir);
  if (!handle) {
    why = dlerror();
    return nullptr;
  }
  auto fn = reinterpret_cast<HostElementKernel>(
      dlsym(handle, whale::rt::fused::kElementKernelName));
  if (!fn)
    why = "no whale_element in a generated kernel";
  return built[source] = fn;
}

} // namespace whale::testing

#endif
