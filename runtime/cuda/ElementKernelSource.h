//===- ElementKernelSource.h - an element program as a kernel's source -*-
// C++ -*-===//
//
// The interpreter (runtime/FusedProgram.h) keeps a program's registers in
// an array each thread indexes at run time, which a GPU must put in local
// memory: on an H200 that made a residual add 25 times slower than its
// bytes (docs/gpu.md). This writes a program without a row op as the
// source of a kernel of its own: registers become scalars, extents and
// strides constants (so divisions become multiplies), and each
// instruction one C statement computing what `fused::step` computes. The
// CUDA device compiles it with NVRTC (Nvrtc.h) the first time it meets the
// program and falls back to the interpreter where it cannot.
//
// The kernel visits its points as runThread and runPart do:
//
//   whale_element(WhaleOperands p, long long parts, float *partials)
//
// runs a grid loop over threads x parts; each (point t, part) runs its run
// of terms, writes its points' results and either writes its sums (parts
// == 1) or leaves them in partials [outputs, parts, threads] for
// fused::sumParts. The source is plain C++ too: outside a CUDA compiler
// its prelude makes the grid loop one host loop, and a CPU test builds it
// with the host compiler and runs it against the interpreter, bit for bit.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_CUDA_ELEMENTKERNELSOURCE_H
#define WHALE_RUNTIME_CUDA_ELEMENTKERNELSOURCE_H

#include "runtime/FusedProgram.h"

#include <cstring>
#include <sstream>
#include <string>
#include <vector>

namespace whale::rt::fused {

/// The generated kernel's (unmangled) name.
inline constexpr const char *kElementKernelName = "whale_element";

namespace detail {

/// `f` exactly, as the prelude's whale_float of its bits.
inline std::string floatLiteral(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return "whale_float(" + std::to_string(bits) + "u)";
}

inline std::string reg(int32_t r) { return "r" + std::to_string(r); }

/// One instruction as the statement fused::step's case for it is.
inline std::string statement(const Instr &in) {
  const std::string a = reg(in.a), b = reg(in.b), c = reg(in.c);
  std::string e;
  switch (in.op) {
  case Const:
    e = floatLiteral(in.imm);
    break;
  case Add:
    e = a + " + " + b;
    break;
  case Sub:
    e = a + " - " + b;
    break;
  case Mul:
    e = a + " * " + b;
    break;
  case Div:
    e = a + " / " + b;
    break;
  case Neg:
    e = "-" + a;
    break;
  case Exp:
    e = "expf(" + a + ")";
    break;
  case Tanh:
    e = "tanhf(" + a + ")";
    break;
  case Log:
    e = "logf(" + a + ")";
    break;
  case Sqrt:
    e = "sqrtf(" + a + ")";
    break;
  case Positive:
    e = a + " > 0.0f ? 1.0f : 0.0f";
    break;
  case Less:
    e = a + " < " + b + " ? 1.0f : 0.0f";
    break;
  case Select:
    e = a + " != 0.0f ? " + b + " : " + c;
    break;
  default: // parse refuses other ops; step leaves the register alone
    return "";
  }
  return reg(in.dst) + " = " + e + ";";
}

/// Statements naming i<d>, point (tVar, kVar)'s index along dimension d,
/// in 32 bits where the space is narrow.
inline std::string indexOf(const Layout &l, const std::string &tVar,
                           const std::string &kVar, const std::string &indent) {
  const std::string type = l.narrow ? "unsigned" : "long long";
  const std::string suffix = l.narrow ? "u" : "LL";
  std::ostringstream s;
  s << indent << type << " qt = (" << type << ")" << tVar << ", qk = (" << type
    << ")" << kVar << ";\n";
  for (int d = l.rank - 1; d >= 0; --d) {
    const std::string q = l.summed[d] ? "qk" : "qt";
    if (l.extents[d] == 1) {
      s << indent << "const long long i" << d << " = 0;\n";
      continue;
    }
    s << indent << "const long long i" << d << " = (long long)(" << q << " % "
      << l.extents[d] << suffix << ");\n";
    s << indent << q << " /= " << l.extents[d] << suffix << ";\n";
  }
  s << indent << "(void)qt;\n" << indent << "(void)qk;\n";
  return s.str();
}

/// Operand `slot`'s element at the point whose index indexOf named.
inline std::string offsetOf(const Layout &l, int slot) {
  if (l.dense[slot])
    return "t";
  std::string e;
  for (int d = 0; d < l.rank; ++d) {
    if (l.strides[slot][d] == 0)
      continue;
    e += (e.empty() ? "" : " + ") + ("i" + std::to_string(d)) + " * " +
         std::to_string(l.strides[slot][d]) + "LL";
  }
  return e.empty() ? "0" : e;
}

inline bool needsIndex(const Layout &l) {
  for (int s = 0; s < l.inputs + l.outputs; ++s)
    if (!l.dense[s])
      return true;
  return false;
}

inline const char *prelude() {
  return R"(#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define WHALE_KERNEL extern "C" __global__
#define WHALE_FIRST (blockIdx.x * (long long)blockDim.x + threadIdx.x)
#define WHALE_STEP ((long long)blockDim.x * gridDim.x)
__device__ inline float whale_float(unsigned u) { return __uint_as_float(u); }
#else
#include <math.h>
#include <string.h>
#define WHALE_KERNEL extern "C"
#define WHALE_FIRST 0LL
#define WHALE_STEP 1LL
static inline float whale_float(unsigned u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}
#endif
struct WhaleOperands {
  const void *data[16];
};
)";
}

} // namespace detail

/// The kernel's source for `l` and `code`, or false (with `why`) for a
/// program it does not cover: one with a row op.
inline bool elementKernelSource(const Layout &l, const std::vector<Instr> &code,
                                std::string &source, std::string &why) {
  using namespace detail;
  static_assert(kMaxOperands == 16, "the prelude's WhaleOperands holds 16");
  if (l.rowOp != NoRowOp) {
    why = "a program with a row op runs in the interpreter";
    return false;
  }
  std::ostringstream s;
  s << prelude();
  s << "WHALE_KERNEL void " << kElementKernelName
    << "(WhaleOperands p, long long parts, float *partials) {\n";
  s << "  const long long threads = " << l.threads << "LL, terms = " << l.terms
    << "LL;\n";
  s << "  const long long each = (terms + parts - 1) / parts;\n";
  s << "  for (long long at = WHALE_FIRST; at < threads * parts; "
       "at += WHALE_STEP) {\n";
  s << "    const long long t = at % threads, part = at / threads;\n";
  s << "    const long long k0 = part * each < terms ? part * each : terms;\n";
  s << "    const long long k1 = k0 + each < terms ? k0 + each : terms;\n";
  s << "    (void)partials;\n";
  bool sums = false;
  for (int o = 0; o < l.outputs; ++o)
    if (l.sum[o]) {
      sums = true;
      s << "    float acc" << o << " = 0.0f;\n";
    }
  s << "    for (long long k = k0; k < k1; ++k) {\n";
  if (needsIndex(l))
    s << indexOf(l, "t", "k", "      ");
  s << "      float ";
  for (int r = 0; r < l.registers; ++r)
    s << (r ? ", " : "") << reg(r) << " = 0.0f";
  s << ";\n";
  for (int i = 0; i < l.inputs; ++i)
    s << "      " << reg(i) << " = ((const float *)p.data[" << i << "])["
      << offsetOf(l, i) << "];\n";
  for (const Instr &in : code)
    s << "      " << statement(in) << "\n";
  for (int o = 0; o < l.outputs; ++o) {
    const std::string value = reg(l.resultRegister[o]);
    if (l.sum[o])
      s << "      acc" << o << " += " << value << ";\n";
    else
      s << "      ((float *)p.data[" << l.inputs + o << "])["
        << offsetOf(l, l.inputs + o) << "] = " << value << ";\n";
  }
  s << "    }\n";
  if (sums) {
    s << "    if (parts == 1) {\n";
    s << "      const long long k = 0;\n";
    if (needsIndex(l))
      s << indexOf(l, "t", "k", "      ");
    for (int o = 0; o < l.outputs; ++o) {
      if (!l.sum[o])
        continue;
      s << "      ((float *)p.data[" << l.inputs + o << "])["
        << offsetOf(l, l.inputs + o) << "] = acc" << o;
      if (l.meanOf[o] > 0.0f)
        s << " / " << floatLiteral(l.meanOf[o]);
      s << ";\n";
    }
    s << "    } else {\n";
    for (int o = 0; o < l.outputs; ++o)
      if (l.sum[o])
        s << "      partials[(" << o
          << "LL * parts + part) * threads + t] = acc" << o << ";\n";
    s << "    }\n";
  }
  s << "  }\n}\n";
  source = s.str();
  return true;
}

} // namespace whale::rt::fused

#endif
