//===- Nvrtc.h - CUDA C compiled at run time, when NVRTC is there -*- C++
//-*-===//
//
// NVRTC turns the source of a generated kernel (ElementKernelSource.h) into
// a cubin for the GPU in hand. It is loaded with dlopen, not linked: the
// CUDA plugin then loads where NVRTC is missing (the device falls back to
// its interpreter), and the CPU tests compile generated kernels where the
// toolkit is installed, with no GPU and no CUDA runtime. NVRTC needs no
// GPU to compile.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_CUDA_NVRTC_H
#define WHALE_RUNTIME_CUDA_NVRTC_H

#include <string>
#include <vector>

namespace whale::rt::cuda {

class Nvrtc {
public:
  /// The process's NVRTC, loaded on first use; null (with the reason in
  /// `why`) where no libnvrtc loads.
  static Nvrtc *get(std::string &why);

  /// Compiles `source` for `arch` ("sm_90") to a cubin; false with the
  /// compiler's log in `why`. Floating-point contraction is off, so each
  /// operation rounds as the interpreter's does.
  bool compile(const std::string &source, const std::string &arch,
               std::vector<char> &cubin, std::string &why) const;

  /// NVRTC's version, major * 10 + minor / 10 (130: 13.0).
  int version() const { return versionNumber; }

private:
  Nvrtc() = default;
  using Result = int;
  using Program = void *;
  Result (*create)(Program *, const char *, const char *, int,
                   const char *const *, const char *const *) = nullptr;
  Result (*compileProgram)(Program, int, const char *const *) = nullptr;
  Result (*logSize)(Program, size_t *) = nullptr;
  Result (*log)(Program, char *) = nullptr;
  Result (*cubinSize)(Program, size_t *) = nullptr;
  Result (*getCubin)(Program, char *) = nullptr;
  Result (*destroy)(Program *) = nullptr;
  Result (*versionOf)(int *, int *) = nullptr;
  int versionNumber = 0;
};

} // namespace whale::rt::cuda

#endif
