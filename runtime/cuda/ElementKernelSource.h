//===- ElementKernelSource.h - an element program as a kernel's source -*-
// C++ -*-===//
//
// The interpreter (runtime/ops/ElementProgram.h) keeps a program's registers in
// an array each thread indexes at run time, which a GPU must put in local
// memory: on an H200 that made a residual add 25 times slower than its
// bytes (docs/gpu.md). This writes a program as the source of a kernel
// of its own: registers become scalars, extents and
// strides constants (so divisions become multiplies), and each
// instruction one C statement computing what `fused::step` computes. The
// CUDA device compiles it with NVRTC (Nvrtc.h) the first time it meets the
// program and falls back to the interpreter where it cannot.
//
//   whale_element(WhaleOperands p, long long parts, float *partials)
//
// A program without a row op visits its points as runThread and runPart
// do: a grid loop over threads x parts, each (point t, part) running its
// run of terms, writing its points' results and either its sums (parts ==
// 1) or partial sums in partials [outputs, parts, threads] for
// fused::sumParts. A program with a row op (layernorm, softmax) runs a
// block per row, as the interpreter's row kernel and runRow. The source is
// plain C++ too: outside a CUDA compiler its prelude makes the grid loop
// one host loop and a block one lane, and a CPU test builds it with the
// host compiler and runs it against the interpreter, bit for bit.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_CUDA_ELEMENTKERNELSOURCE_H
#define WHALE_RUNTIME_CUDA_ELEMENTKERNELSOURCE_H

#include "runtime/ops/ElementProgram.h"

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
  case Round:
    e = "whale_round_bf16(" + a + ")";
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
#define WHALE_ROW_FIRST ((long long)blockIdx.x)
#define WHALE_ROW_STEP ((long long)gridDim.x)
#define WHALE_LANE ((long long)threadIdx.x)
#define WHALE_LANES ((long long)blockDim.x)
#define WHALE_SYNC() __syncthreads()
#define WHALE_SHARED __shared__
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif
__device__ inline float whale_float(unsigned u) { return __uint_as_float(u); }
__device__ inline unsigned whale_bits(float f) { return __float_as_uint(f); }
template <bool Max> __device__ float whale_block(float v) {
  __shared__ float partial[32];
  __shared__ float result;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int o = 16; o > 0; o >>= 1) {
    const float w = __shfl_xor_sync(0xffffffffu, v, o);
    v = Max ? fmaxf(v, w) : v + w;
  }
  if (lane == 0)
    partial[warp] = v;
  __syncthreads();
  if (warp == 0) {
    float w = lane < (int)((blockDim.x + 31) >> 5) ? partial[lane]
                                                   : (Max ? -INFINITY : 0.0f);
    for (int o = 16; o > 0; o >>= 1) {
      const float x = __shfl_xor_sync(0xffffffffu, w, o);
      w = Max ? fmaxf(w, x) : w + x;
    }
    if (lane == 0)
      result = w;
  }
  __syncthreads();
  const float r = result;
  __syncthreads();
  return r;
}
#define WHALE_BLOCK_SUM(v) whale_block<false>(v)
#define WHALE_BLOCK_MAX(v) whale_block<true>(v)
#else
#include <math.h>
#include <string.h>
#define WHALE_KERNEL extern "C"
#define WHALE_FIRST 0LL
#define WHALE_STEP 1LL
#define WHALE_ROW_FIRST 0LL
#define WHALE_ROW_STEP 1LL
#define WHALE_LANE 0LL
#define WHALE_LANES 1LL
#define WHALE_SYNC()
#define WHALE_SHARED static
#define WHALE_BLOCK_SUM(v) (v)
#define WHALE_BLOCK_MAX(v) (v)
static inline float whale_float(unsigned u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}
static inline unsigned whale_bits(float f) {
  unsigned u;
  memcpy(&u, &f, sizeof u);
  return u;
}
#define __device__
#endif
/* rt::roundToBf16 (runtime/ops/Bf16.h): to nearest, ties to even, NaN
   kept a NaN. */
__device__ inline float whale_round_bf16(float f) {
  unsigned u = whale_bits(f);
  if ((u & 0x7f800000u) == 0x7f800000u) {
    if (u & 0x007fffffu)
      u |= 0x00400000u;
  } else {
    u += 0x7fffu + ((u >> 16) & 1u);
  }
  return whale_float(u & 0xffff0000u);
}
__device__ inline float whale_load_bf16(const void *p, long long at) {
  return whale_float((unsigned)((const unsigned short *)p)[at] << 16);
}
__device__ inline void whale_store_bf16(void *p, long long at, float v) {
  ((unsigned short *)p)[at] =
      (unsigned short)(whale_bits(whale_round_bf16(v)) >> 16);
}
struct WhaleOperands {
  const void *data[16];
};
)";
}

} // namespace detail

namespace detail {

/// Operand `slot`'s element at the point, as an f32 (fused::loadOperand).
inline std::string load(const Layout &l, int slot) {
  const std::string data = "p.data[" + std::to_string(slot) + "]";
  if (l.bf16[slot])
    return "whale_load_bf16(" + data + ", " + offsetOf(l, slot) + ")";
  return "((const float *)" + data + ")[" + offsetOf(l, slot) + "]";
}

/// A point's index, registers, input loads and instructions: the body
/// both kernel shapes share, for point (t, k).
inline std::string pointBody(const Layout &l, const std::vector<Instr> &code,
                             const std::string &k, const std::string &indent) {
  std::ostringstream s;
  if (needsIndex(l))
    s << indexOf(l, "t", k, indent);
  s << indent << "float ";
  for (int r = 0; r < l.registers; ++r)
    s << (r ? ", " : "") << reg(r) << " = 0.0f";
  s << ";\n";
  for (int i = 0; i < l.inputs; ++i)
    s << indent << reg(i) << " = " << load(l, i) << ";\n";
  for (const Instr &in : code)
    s << indent << statement(in) << "\n";
  return s.str();
}

inline std::string store(const Layout &l, int o, const std::string &value) {
  const int slot = l.inputs + o;
  if (l.bf16[slot])
    return "whale_store_bf16((void *)p.data[" + std::to_string(slot) + "], " +
           offsetOf(l, slot) + ", " + value + ");";
  return "((float *)p.data[" + std::to_string(slot) + "])[" +
         offsetOf(l, slot) + "] = " + value + ";";
}

/// A program without a row op: a thread per (point, part), as runThread
/// and runPart.
inline std::string pointsKernel(const Layout &l,
                                const std::vector<Instr> &code) {
  std::ostringstream s;
  s << "  const long long threads = " << l.threads << "LL, terms = " << l.terms
    << "LL;\n";
  s << "  const long long each = (terms + parts - 1) / parts;\n";
  s << "  for (long long at = WHALE_FIRST; at < threads * parts; "
       "at += WHALE_STEP) {\n";
  s << "    const long long t = at % threads, part = at / threads;\n";
  s << "    const long long k0 = part * each < terms ? part * each : terms;\n";
  s << "    const long long k1 = k0 + each < terms ? k0 + each : terms;\n";
  bool sums = false;
  for (int o = 0; o < l.outputs; ++o)
    if (l.sum[o]) {
      sums = true;
      s << "    float acc" << o << " = 0.0f;\n";
    }
  s << "    for (long long k = k0; k < k1; ++k) {\n";
  s << pointBody(l, code, "k", "      ");
  for (int o = 0; o < l.outputs; ++o) {
    const std::string value = reg(l.resultRegister[o]);
    if (l.sum[o])
      s << "      acc" << o << " += " << value << ";\n";
    else
      s << "      " << store(l, o, value) << "\n";
  }
  s << "    }\n";
  if (sums) {
    s << "    if (parts == 1) {\n";
    s << "      const long long k = 0;\n";
    if (needsIndex(l))
      s << indexOf(l, "t", "k", "      ");
    for (int o = 0; o < l.outputs; ++o)
      if (l.sum[o])
        s << "      "
          << store(l, o,
                   "acc" + std::to_string(o) +
                       (l.meanOf[o] > 0.0f ? " / " + floatLiteral(l.meanOf[o])
                                           : std::string()))
          << "\n";
    s << "    } else {\n";
    for (int o = 0; o < l.outputs; ++o)
      if (l.sum[o])
        s << "      partials[(" << o
          << "LL * parts + part) * threads + t] = acc" << o << ";\n";
    s << "    }\n";
  }
  s << "  }\n";
  return s.str();
}

/// The row op's result `value` for column c of the row, as
/// fused::storeRowResult stores it: into the row's values y, or rounded
/// into the bf16 result where the row is kept apart.
inline std::string storeRowResult(const Layout &l, const std::string &value) {
  if (!roundsRow(l))
    return "y[c] = " + value + ";";
  return "whale_store_bf16((void *)p.data[" +
         std::to_string(l.inputs + l.rowResult) + "], row * width + c, " +
         value + ");";
}

/// A program with a row op: a block per row (one host loop outside CUDA),
/// as the interpreter's row kernel and runRow: the row's points, the
/// row op's input kept in its output row (or, where that is rounded, in a
/// row of shared memory: each lane only touches its own columns), the
/// statistics reduced across the block in the runtime's order, then the
/// row op.
inline std::string rowsKernel(const Layout &l, const std::vector<Instr> &code) {
  const int64_t width = l.extents[l.rank - 1];
  const int rowOut = l.inputs + l.rowResult;
  std::ostringstream s;
  s << "  (void)parts;\n  (void)partials;\n";
  s << "  const long long rows = " << l.threads << "LL, width = " << width
    << "LL;\n";
  s << "  const float w = " << floatLiteral(static_cast<float>(width)) << ";\n";
  if (roundsRow(l))
    s << "  WHALE_SHARED float whale_row[" << width << "];\n";
  s << "  for (long long row = WHALE_ROW_FIRST; row < rows; "
       "row += WHALE_ROW_STEP) {\n";
  if (roundsRow(l))
    s << "    float *y = whale_row;\n";
  else
    s << "    float *y = (float *)p.data[" << rowOut << "] + row * width;\n";
  const bool sums = l.rowOp == LayerNorm || l.rowOp == RmsNorm;
  s << "    float local = " << (sums ? "0.0f" : "-INFINITY") << ";\n";
  s << "    for (long long c = WHALE_LANE; c < width; c += WHALE_LANES) {\n";
  s << "      const long long t = row * width + c;\n";
  s << pointBody(l, code, "0LL", "      ");
  for (int o = 0; o < l.outputs; ++o)
    if (o != l.rowResult)
      s << "      " << store(l, o, reg(l.resultRegister[o])) << "\n";
  s << "      const float v = " << reg(l.rowInput) << ";\n";
  s << "      y[c] = v;\n";
  s << "      local = "
    << (l.rowOp == LayerNorm ? "local + v"
        : l.rowOp == RmsNorm ? "local + v * v"
                             : "fmaxf(local, v)")
    << ";\n";
  s << "    }\n";
  if (l.rowOp == LayerNorm) {
    s << "    const float mean = WHALE_BLOCK_SUM(local) / w;\n";
    s << "    float squares = 0.0f;\n";
    s << "    for (long long c = WHALE_LANE; c < width; c += WHALE_LANES)\n";
    s << "      squares += (y[c] - mean) * (y[c] - mean);\n";
    s << "    const float rstd = 1.0f / sqrtf(WHALE_BLOCK_SUM(squares) / w + "
      << floatLiteral(l.eps) << ");\n";
    s << "    for (long long c = WHALE_LANE; c < width; c += WHALE_LANES) {\n";
    s << "      const long long t = row * width + c;\n";
    if (needsIndex(l))
      s << indexOf(l, "t", "0LL", "      ");
    s << "      const float g = " << load(l, l.gamma) << ";\n";
    s << "      const float b = " << load(l, l.beta) << ";\n";
    s << "      " << storeRowResult(l, "(y[c] - mean) * rstd * g + b") << "\n";
    s << "    }\n";
  } else if (l.rowOp == RmsNorm) {
    s << "    const float rstd = 1.0f / sqrtf(WHALE_BLOCK_SUM(local) / w + "
      << floatLiteral(l.eps) << ");\n";
    s << "    for (long long c = WHALE_LANE; c < width; c += WHALE_LANES) {\n";
    s << "      const long long t = row * width + c;\n";
    if (needsIndex(l))
      s << indexOf(l, "t", "0LL", "      ");
    s << "      const float g = " << load(l, l.gamma) << ";\n";
    s << "      " << storeRowResult(l, "y[c] * rstd * g") << "\n";
    s << "    }\n";
  } else {
    s << "    const float mx = WHALE_BLOCK_MAX(local);\n";
    s << "    const bool masked = mx == -INFINITY;\n";
    s << "    float total = 0.0f;\n";
    s << "    for (long long c = WHALE_LANE; c < width; c += WHALE_LANES) {\n";
    s << "      y[c] = masked ? 0.0f : expf(y[c] - mx);\n";
    s << "      total += y[c];\n";
    s << "    }\n";
    s << "    total = WHALE_BLOCK_SUM(total);\n";
    s << "    const float inv = total > 0.0f ? 1.0f / total : 0.0f;\n";
    s << "    for (long long c = WHALE_LANE; c < width; c += WHALE_LANES)\n";
    s << "      " << storeRowResult(l, "y[c] * inv") << "\n";
  }
  s << "    WHALE_SYNC();\n";
  s << "  }\n";
  return s.str();
}

} // namespace detail

/// The kernel's source for `l` and `code`. A program with a row op runs a
/// block per row (launch it so: fused::rowKernel), any other a thread per
/// point and part.
inline bool elementKernelSource(const Layout &l, const std::vector<Instr> &code,
                                std::string &source, std::string &why) {
  using namespace detail;
  static_assert(kMaxOperands == 16, "the prelude's WhaleOperands holds 16");
  if (l.rowOp != NoRowOp && l.rowOp != LayerNorm && l.rowOp != Softmax &&
      l.rowOp != RmsNorm) {
    why = "a program's row op is none the generator knows";
    return false;
  }
  std::ostringstream s;
  s << prelude();
  s << "WHALE_KERNEL void " << kElementKernelName
    << "(WhaleOperands p, long long parts, float *partials) {\n";
  s << (l.rowOp == NoRowOp ? pointsKernel(l, code) : rowsKernel(l, code));
  s << "}\n";
  source = s.str();
  return true;
}

} // namespace whale::rt::fused

#endif
