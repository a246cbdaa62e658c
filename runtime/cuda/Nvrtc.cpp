//===- Nvrtc.cpp - CUDA C compiled at run time, when NVRTC is there -------===//

#include "runtime/cuda/Nvrtc.h"

#include <dlfcn.h>

#include <mutex>
#include <type_traits>

namespace whale::rt::cuda {

Nvrtc *Nvrtc::get(std::string &why) {
  static std::once_flag once;
  static Nvrtc *loaded = nullptr;
  static std::string failure;
  std::call_once(once, [] {
    void *lib = nullptr;
    // The toolkit's name first, then the versioned names a wheel (PyTorch's
    // nvidia-cuda-nvrtc) or a driver-only machine carries.
    for (const char *name : {"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12"})
      if ((lib = dlopen(name, RTLD_NOW | RTLD_LOCAL)))
        break;
    if (!lib) {
      failure = "no libnvrtc.so could be loaded";
      return;
    }
    auto *n = new Nvrtc();
    auto bind = [&](auto &fn, const char *symbol) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(
          dlsym(lib, symbol));
      return fn != nullptr;
    };
    if (!bind(n->create, "nvrtcCreateProgram") ||
        !bind(n->compileProgram, "nvrtcCompileProgram") ||
        !bind(n->logSize, "nvrtcGetProgramLogSize") ||
        !bind(n->log, "nvrtcGetProgramLog") ||
        !bind(n->cubinSize, "nvrtcGetCUBINSize") ||
        !bind(n->getCubin, "nvrtcGetCUBIN") ||
        !bind(n->destroy, "nvrtcDestroyProgram") ||
        !bind(n->versionOf, "nvrtcVersion")) {
      failure = "libnvrtc.so lacks a function Whale calls";
      delete n;
      return;
    }
    int major = 0, minor = 0;
    n->versionOf(&major, &minor);
    n->versionNumber = major * 10 + minor;
    loaded = n;
  });
  if (!loaded)
    why = failure;
  return loaded;
}

bool Nvrtc::compile(const std::string &source, const std::string &arch,
                    std::vector<char> &cubin, std::string &why) const {
  Program program = nullptr;
  if (create(&program, source.c_str(), "whale_element.cu", 0, nullptr,
             nullptr) != 0) {
    why = "nvrtcCreateProgram failed";
    return false;
  }
  const std::string archFlag = "--gpu-architecture=" + arch;
  const char *options[] = {archFlag.c_str(), "--fmad=false", "--std=c++17"};
  const bool built = compileProgram(program, 3, options) == 0;
  bool ok = false;
  size_t size = 0;
  if (!built) {
    std::string text;
    if (logSize(program, &size) == 0 && size > 1) {
      text.resize(size);
      log(program, text.data());
      text.resize(size - 1);
    }
    why =
        "NVRTC could not compile a generated kernel for " + arch + ": " + text;
  } else if (cubinSize(program, &size) != 0 || size == 0) {
    why = "NVRTC made no cubin for " + arch;
  } else {
    cubin.resize(size);
    ok = getCubin(program, cubin.data()) == 0;
    if (!ok)
      why = "NVRTC could not hand over its cubin";
  }
  destroy(&program);
  return ok;
}

} // namespace whale::rt::cuda
