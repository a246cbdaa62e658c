//===- ElementProgram.h - a fused region as data a GPU thread runs -*- C++
//-*-===//
//
// On the CPU a fused region is a kernel the JIT generates. A GPU cannot run
// host code, and the machine that drives it often has no MLIR (it runs an
// ahead-of-time plan), so the lowering also writes each region as an
// element program: a few int64 words the plan carries as a constant, which
// one CUDA kernel runs for every region, a thread per element. The program
// names the region's iteration space (its dimensions already merged where
// every operand treats them alike), which inputs are broadcast along which
// dimensions, which results are sums over which, and the scalar
// instructions that make each element, in the order the runtime's own
// kernels compute them.
//
// Layout, in int64 words:
//   kMagic, rank, extents[rank], inputs, outputs, registers, instructions,
//   per input:  reads[rank], type          (0: broadcast along it)
//   per output: keeps[rank], mean, register, type (keeps 0: summed over)
//   row op:     kind (0: none; 1: layernorm, 2: softmax, 3: RMSNorm, over
//               the last dimension), then for one: the result it makes,
//               the register holding its input, and for layernorm the
//               inputs gamma and beta and eps (the f32's bits); for RMSNorm
//               its weight twice (gamma's place and beta's) and eps
//   per instruction: op, dst, a, b, c      (Const: a holds the f32's bits)
//
// An operand's type is 0 for f32, 1 for bf16 (amp's storage): a bf16
// input is widened as it is loaded, a bf16 result rounded to nearest as it
// is stored; registers are always f32 (Round rounds one to bf16 there).
//
// A program with a row op runs a row at a time (the last dimension): each
// point's instructions, the row op's input kept in its output's row, then
// the row's statistics and the row op, as runtime/cpu/Normalization.cpp
// computes them. Where the row op's result is bf16 (amp's storage, rounded
// as it is stored), the row is kept in f32 apart from it, in a scratch row
// of at most kMaxRoundedRow elements the caller gives (a GPU block's
// shared memory), and only the row op's last pass writes the result.
//
// The interpreter below is plain C++ for both compilers: nvcc builds it into
// the CUDA kernel, and the CPU tests run the same functions over the same
// programs against the generated kernels.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_OPS_ELEMENTPROGRAM_H
#define WHALE_RUNTIME_OPS_ELEMENTPROGRAM_H

#include "runtime/cuda/ElementMath.h"
#include "runtime/ops/Bf16.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace whale::rt::fused {

constexpr int64_t kMagic = 0x5748464550524733; // "WHFEPRG3"
/// The most operands (inputs and results) and registers a program has;
/// the fuser keeps regions meant for programs within them.
constexpr int kMaxOperands = 16;
constexpr int kMaxRegisters = 48;
/// The CUDA kernel keeps a program in a block's shared memory (24 KiB).
constexpr int kMaxInstructions = 1024;
/// The widest row a program rounds its row op's result in: the f32 row is
/// kept apart meanwhile (32 KiB of a GPU block's shared memory). The
/// dialect's FusedOp::kMaxRoundedRowWidth, which the lowering checks.
constexpr int64_t kMaxRoundedRow = 8192;

enum Op : int32_t {
  Const,    ///< dst = imm
  Add,      ///< dst = a + b
  Sub,      ///< dst = a - b
  Mul,      ///< dst = a * b
  Div,      ///< dst = a / b
  Neg,      ///< dst = -a
  Exp,      ///< dst = exp(a)
  Tanh,     ///< dst = tanh(a)
  Log,      ///< dst = log(a)
  Sqrt,     ///< dst = sqrt(a)
  Positive, ///< dst = a > 0 (1 or 0)
  Less,     ///< dst = a < b (1 or 0)
  Select,   ///< dst = a != 0 ? b : c
  Round,    ///< dst = the bf16 value nearest a (roundToBf16)
  NumOps
};

struct Instr {
  int32_t op, dst, a, b, c;
  float imm;
};

/// A program read from its words: where each operand's element lies for a
/// point of the iteration space, and what each result is.
struct Layout {
  int rank = 0;
  int inputs = 0, outputs = 0, registers = 0;
  int64_t extents[cuda::kMaxRank] = {};
  /// Per operand (inputs, then results), the element stride of each
  /// dimension: 0 along a dimension it is broadcast along or summed over.
  int64_t strides[kMaxOperands][cuda::kMaxRank] = {};
  /// 1 where some result sums over a dimension. Every sum of a program
  /// sums over the same dimensions, so a thread owns one element of every
  /// sum and adds its terms in the iteration's order.
  bool summed[cuda::kMaxRank] = {};
  int32_t resultRegister[kMaxOperands] = {};
  bool sum[kMaxOperands] = {};
  /// Per operand: stored in bf16 (else f32).
  bool bf16[kMaxOperands] = {};
  /// A mean's divisor (the elements it summed); 0 for a plain sum.
  float meanOf[kMaxOperands] = {};
  /// Per operand: every dimension read or written, in a program without
  /// sums, so point t is its element t (no index arithmetic).
  bool dense[kMaxOperands] = {};
  /// The iteration space has under 2^31 points: a generated kernel
  /// (cuda/ElementKernelSource.h) does its index arithmetic in 32 bits.
  bool narrow = false;
  int64_t threads = 1; ///< the points no sum adds over; with a row op, rows
  int64_t terms = 1;   ///< the points each thread adds, per sum
  /// The row op that ends the program (RowOp), the result it makes, the
  /// register holding its input, and a layernorm's gamma and beta (inputs)
  /// and eps.
  int32_t rowOp = 0;
  int32_t rowResult = 0, rowInput = 0, gamma = 0, beta = 0;
  float eps = 0;
};

enum RowOp : int32_t { NoRowOp, LayerNorm, Softmax, RmsNorm };

/// The operand types a program's words name.
enum OperandType : int64_t { F32Operand = 0, Bf16Operand = 1 };

/// Operand `slot`'s element `at`, as an f32.
WHALE_HD float loadOperand(const Layout &l, const void *const *data, int slot,
                           int64_t at) {
  if (!l.bf16[slot])
    return static_cast<const float *>(data[slot])[at];
  const uint32_t u =
      static_cast<uint32_t>(static_cast<const uint16_t *>(data[slot])[at])
      << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/// Stores `v` as operand `slot`'s element `at`, rounded where it is bf16.
WHALE_HD void storeOperand(const Layout &l, const void *const *data, int slot,
                           int64_t at, float v) {
  void *base = const_cast<void *>(data[slot]);
  if (!l.bf16[slot]) {
    static_cast<float *>(base)[at] = v;
    return;
  }
  const float r = roundToBf16(v);
  uint32_t u;
  memcpy(&u, &r, sizeof u);
  static_cast<uint16_t *>(base)[at] = static_cast<uint16_t>(u >> 16);
}

/// Reads `words` (`size` of them) into `layout` and `code`; false with
/// `why` for words that are not a program this interpreter runs. With
/// `operandsOnly`, stops before the instructions (`code` untouched): what
/// a caller needs to check the operands it hands a program, per call.
inline bool parse(const int64_t *words, int64_t size, Layout &layout,
                  std::vector<Instr> &code, std::string &why,
                  bool operandsOnly = false) {
  int64_t at = 0;
  auto next = [&](int64_t &v) {
    if (at >= size)
      return false;
    v = words[at++];
    return true;
  };
  int64_t magic = 0, rank = 0;
  if (!words || !next(magic) || magic != kMagic || !next(rank) || rank < 1 ||
      rank > cuda::kMaxRank) {
    why = "not an element program";
    return false;
  }
  layout = Layout();
  layout.rank = static_cast<int>(rank);
  int64_t points = 1;
  for (int d = 0; d < rank; ++d) {
    if (!next(layout.extents[d]) || layout.extents[d] < 1 ||
        layout.extents[d] > (int64_t(1) << 62) / points) {
      why = "an element program's extents are cut short, not positive or "
            "too many";
      return false;
    }
    points *= layout.extents[d];
  }
  int64_t inputs = 0, outputs = 0, registers = 0, count = 0;
  if (!next(inputs) || !next(outputs) || !next(registers) || !next(count) ||
      inputs < 0 || outputs < 1 || inputs > kMaxOperands ||
      outputs > kMaxOperands || inputs + outputs > kMaxOperands ||
      registers < inputs || registers > kMaxRegisters || count < 0 ||
      count > kMaxInstructions) {
    why = "an element program's counts are out of range";
    return false;
  }
  layout.inputs = static_cast<int>(inputs);
  layout.outputs = static_cast<int>(outputs);
  layout.registers = static_cast<int>(registers);
  // An input's strides: row-major over the dimensions it reads.
  for (int i = 0; i < inputs; ++i) {
    int64_t flags[cuda::kMaxRank], type = 0;
    for (int d = 0; d < rank; ++d)
      if (!next(flags[d])) {
        why = "an element program's inputs are cut short";
        return false;
      }
    if (!next(type) || (type != F32Operand && type != Bf16Operand)) {
      why = "an element program's input has no type it knows";
      return false;
    }
    layout.bf16[i] = type == Bf16Operand;
    int64_t stride = 1;
    for (int d = static_cast<int>(rank) - 1; d >= 0; --d) {
      layout.strides[i][d] = flags[d] ? stride : 0;
      if (flags[d])
        stride *= layout.extents[d];
    }
  }
  bool anySum = false;
  for (int o = 0; o < outputs; ++o) {
    int64_t keeps[cuda::kMaxRank], mean = 0, reg = 0;
    for (int d = 0; d < rank; ++d)
      if (!next(keeps[d])) {
        why = "an element program's results are cut short";
        return false;
      }
    int64_t type = 0;
    if (!next(mean) || !next(reg) || reg < 0 || reg >= registers) {
      why = "an element program's result has no register";
      return false;
    }
    if (!next(type) || (type != F32Operand && type != Bf16Operand)) {
      why = "an element program's result has no type it knows";
      return false;
    }
    const int slot = layout.inputs + o;
    layout.bf16[slot] = type == Bf16Operand;
    bool sums = false;
    int64_t stride = 1, summedOver = 1;
    for (int d = static_cast<int>(rank) - 1; d >= 0; --d) {
      layout.strides[slot][d] = keeps[d] ? stride : 0;
      if (keeps[d]) {
        stride *= layout.extents[d];
      } else {
        sums = true;
        summedOver *= layout.extents[d];
      }
    }
    // Every sum sums over the same dimensions (see `summed`).
    for (int d = 0; d < rank && sums; ++d) {
      if (anySum && layout.summed[d] != !keeps[d]) {
        why = "an element program's sums sum over different dimensions";
        return false;
      }
      layout.summed[d] = !keeps[d];
    }
    anySum = anySum || sums;
    layout.sum[o] = sums;
    layout.meanOf[o] = sums && mean ? static_cast<float>(summedOver) : 0.0f;
    layout.resultRegister[o] = static_cast<int32_t>(reg);
  }
  for (int d = 0; d < rank; ++d)
    (layout.summed[d] ? layout.terms : layout.threads) *= layout.extents[d];
  layout.narrow = points < (int64_t(1) << 31);
  for (int s = 0; s < inputs + outputs && !anySum; ++s) {
    int64_t stride = 1;
    layout.dense[s] = true;
    for (int d = static_cast<int>(rank) - 1; d >= 0; --d) {
      layout.dense[s] = layout.dense[s] && layout.strides[s][d] == stride;
      stride *= layout.extents[d];
    }
  }
  int64_t rowOp = 0;
  if (!next(rowOp) || rowOp < NoRowOp || rowOp > RmsNorm ||
      (rowOp != NoRowOp && anySum)) {
    why = "an element program's row op is none it knows, or beside sums";
    return false;
  }
  layout.rowOp = static_cast<int32_t>(rowOp);
  if (rowOp != NoRowOp) {
    int64_t result = 0, input = 0, gamma = 0, beta = 0, eps = 0;
    if (!next(result) || !next(input) || result < 0 || result >= outputs ||
        input < 0 || input >= registers ||
        ((rowOp == LayerNorm || rowOp == RmsNorm) &&
         (!next(gamma) || !next(beta) || !next(eps) || gamma < 0 ||
          gamma >= inputs || beta < 0 || beta >= inputs))) {
      why = "an element program's row op names no result, register or input";
      return false;
    }
    if (layout.bf16[layout.inputs + result] &&
        layout.extents[rank - 1] > kMaxRoundedRow) {
      // Its f32 row is kept apart between the row op's passes.
      why = "an element program's row op rounds rows wider than " +
            std::to_string(kMaxRoundedRow) + " elements";
      return false;
    }
    layout.rowResult = static_cast<int32_t>(result);
    layout.rowInput = static_cast<int32_t>(input);
    layout.gamma = static_cast<int32_t>(gamma);
    layout.beta = static_cast<int32_t>(beta);
    uint32_t bits = static_cast<uint32_t>(eps);
    std::memcpy(&layout.eps, &bits, sizeof bits);
    // A thread (or a block) per row of the last dimension.
    layout.threads /= layout.extents[rank - 1];
  }
  if (operandsOnly)
    return true;
  code.resize(static_cast<size_t>(count));
  for (Instr &in : code) {
    int64_t w[5];
    for (int64_t &v : w)
      if (!next(v)) {
        why = "an element program's instructions are cut short";
        return false;
      }
    in.op = static_cast<int32_t>(w[0]);
    in.dst = static_cast<int32_t>(w[1]);
    in.a = static_cast<int32_t>(w[2]);
    in.b = static_cast<int32_t>(w[3]);
    in.c = static_cast<int32_t>(w[4]);
    in.imm = 0;
    auto bad = [&](int64_t r) { return r < 0 || r >= registers; };
    if (w[0] < 0 || w[0] >= NumOps || bad(w[1]) ||
        (w[0] != Const && bad(w[2])) ||
        ((w[0] == Add || w[0] == Sub || w[0] == Mul || w[0] == Div ||
          w[0] == Less || w[0] == Select) &&
         bad(w[3])) ||
        (w[0] == Select && bad(w[4]))) {
      why = "an element program's instruction names no register";
      return false;
    }
    if (w[0] == Const) {
      uint32_t bits = static_cast<uint32_t>(w[2]);
      std::memcpy(&in.imm, &bits, sizeof bits);
    }
  }
  if (at != size) {
    why = "an element program has words after its instructions";
    return false;
  }
  return true;
}

/// The elements operand `slot` (inputs, then results) has: the product of
/// the extents it reads (an input) or keeps (a result).
inline int64_t operandElements(const Layout &l, int slot) {
  int64_t n = 1;
  for (int d = 0; d < l.rank; ++d)
    if (l.strides[slot][d] != 0 || l.extents[d] == 1)
      n *= l.extents[d];
  return n;
}

/// Whether operands of `elements` each (inputs, then results; `count` of
/// them) are what program `l` reads and writes, so no thread strays out of
/// them; `why` says which is not.
inline bool fitsOperands(const Layout &l, const int64_t *elements, int count,
                         std::string &why) {
  if (count != l.inputs + l.outputs) {
    why = "an element program for " + std::to_string(l.inputs) +
          " inputs and " + std::to_string(l.outputs) + " results was given " +
          std::to_string(count) + " operands";
    return false;
  }
  for (int i = 0; i < count; ++i)
    if (elements[i] != operandElements(l, i)) {
      why = "an element program's operand " + std::to_string(i) + " has " +
            std::to_string(operandElements(l, i)) + " elements, not " +
            std::to_string(elements[i]);
      return false;
    }
  return true;
}

/// One instruction on the registers `r`.
WHALE_HD void step(const Instr &in, float *r) {
  switch (in.op) {
  case Const:
    r[in.dst] = in.imm;
    break;
  case Add:
    r[in.dst] = r[in.a] + r[in.b];
    break;
  case Sub:
    r[in.dst] = r[in.a] - r[in.b];
    break;
  case Mul:
    r[in.dst] = r[in.a] * r[in.b];
    break;
  case Div:
    r[in.dst] = r[in.a] / r[in.b];
    break;
  case Neg:
    r[in.dst] = -r[in.a];
    break;
  case Exp:
    r[in.dst] = expf(r[in.a]);
    break;
  case Tanh:
    r[in.dst] = tanhf(r[in.a]);
    break;
  case Log:
    r[in.dst] = logf(r[in.a]);
    break;
  case Sqrt:
    r[in.dst] = sqrtf(r[in.a]);
    break;
  case Positive:
    r[in.dst] = r[in.a] > 0.0f ? 1.0f : 0.0f;
    break;
  case Less:
    r[in.dst] = r[in.a] < r[in.b] ? 1.0f : 0.0f;
    break;
  case Select:
    r[in.dst] = r[in.a] != 0.0f ? r[in.b] : r[in.c];
    break;
  case Round:
    r[in.dst] = roundToBf16(r[in.a]);
    break;
  default:
    break;
  }
}

/// Where point (thread `t`, term `k`) of the iteration space lies in each
/// operand, into `at` (inputs, then results). The point's index along
/// each dimension is found once for all operands (in 32 bits where it
/// fits: cuda::takeCoordinate); a dense operand needs none.
WHALE_HD void offsetsOf(const Layout &l, int64_t t, int64_t k, int64_t *at) {
  const int operands = l.inputs + l.outputs;
  bool all = true;
  for (int s = 0; s < operands; ++s)
    all = all && l.dense[s];
  if (all) {
    for (int s = 0; s < operands; ++s)
      at[s] = t;
    return;
  }
  int64_t index[cuda::kMaxRank], restT = t, restK = k;
  for (int d = l.rank - 1; d >= 0; --d)
    index[d] = cuda::takeCoordinate(l.summed[d] ? restK : restT, l.extents[d]);
  for (int s = 0; s < operands; ++s) {
    if (l.dense[s]) {
      at[s] = t;
      continue;
    }
    int64_t o = 0;
    for (int d = 0; d < l.rank; ++d)
      o += index[d] * l.strides[s][d];
    at[s] = o;
  }
}

/// Where point (thread `t`, term `k`) of the iteration space lies in
/// operand `slot`.
WHALE_HD int64_t offsetOf(const Layout &l, int slot, int64_t t, int64_t k) {
  int64_t at = 0;
  for (int d = l.rank - 1; d >= 0; --d)
    at += cuda::takeCoordinate(l.summed[d] ? k : t, l.extents[d]) *
          l.strides[slot][d];
  return at;
}

/// Thread `t`'s points for terms [k0, k1): their results written, and
/// their share of every sum added to `acc` (one per result) in the
/// iteration's order. `data` holds the inputs' addresses, then the
/// results'.
WHALE_HD void runTerms(const Layout &l, const Instr *code, int count,
                       const void *const *data, int64_t t, int64_t k0,
                       int64_t k1, float *acc) {
  float r[kMaxRegisters];
  int64_t at[kMaxOperands];
  for (int64_t k = k0; k < k1; ++k) {
    offsetsOf(l, t, k, at);
    for (int i = 0; i < l.inputs; ++i)
      r[i] = loadOperand(l, data, i, at[i]);
    for (int c = 0; c < count; ++c)
      step(code[c], r);
    for (int o = 0; o < l.outputs; ++o) {
      const float v = r[l.resultRegister[o]];
      if (l.sum[o])
        acc[o] += v;
      else
        storeOperand(l, data, l.inputs + o, at[l.inputs + o], v);
    }
  }
}

/// Thread `t`'s element of each sum (a mean divided), from its total.
WHALE_HD void writeSum(const Layout &l, const void *const *data, int64_t t,
                       int o, float total) {
  storeOperand(l, data, l.inputs + o, offsetOf(l, l.inputs + o, t, 0),
               l.meanOf[o] > 0.0f ? total / l.meanOf[o] : total);
}

/// Everything thread `t` of a program writes: the elements of its point
/// (or points, where the program sums) and its element of every sum.
WHALE_HD void runThread(const Layout &l, const Instr *code, int count,
                        const void *const *data, int64_t t) {
  float acc[kMaxOperands];
  for (int o = 0; o < l.outputs; ++o)
    acc[o] = 0.0f;
  runTerms(l, code, count, data, t, 0, l.terms, acc);
  for (int o = 0; o < l.outputs; ++o)
    if (l.sum[o])
      writeSum(l, data, t, o, acc[o]);
}

/// Into how many parts a GPU splits each thread's terms, so that a program
/// with few sums of many terms (a bias gradient: 768 sums of 8,192 rows)
/// still fills the device with `wanted` threads: each part adds a run of
/// at least `kMinTermsAPart` terms into a partial sum, and a second pass
/// adds the parts in order (the same order every run). 1: no split.
constexpr int64_t kMinTermsAPart = 32;
inline int64_t termParts(const Layout &l, int64_t wanted) {
  bool sums = false;
  for (int o = 0; o < l.outputs; ++o)
    sums = sums || l.sum[o];
  if (!sums || l.threads >= wanted)
    return 1;
  const int64_t byThreads = (wanted + l.threads - 1) / l.threads;
  const int64_t byTerms = l.terms / kMinTermsAPart;
  return std::max<int64_t>(1, std::min(byThreads, byTerms));
}

/// Split thread `at` (of threads x parts): thread at % threads's run of
/// terms number at / threads, its points' results written and its partial
/// sums put in `partials` [outputs, parts, threads].
WHALE_HD void runPart(const Layout &l, const Instr *code, int count,
                      const void *const *data, int64_t at, int64_t parts,
                      float *partials) {
  const int64_t t = at % l.threads, part = at / l.threads;
  const int64_t each = (l.terms + parts - 1) / parts;
  const int64_t k0 = part * each < l.terms ? part * each : l.terms;
  const int64_t k1 = k0 + each < l.terms ? k0 + each : l.terms;
  float acc[kMaxOperands] = {};
  runTerms(l, code, count, data, t, k0, k1, acc);
  for (int o = 0; o < l.outputs; ++o)
    if (l.sum[o])
      partials[(o * parts + part) * l.threads + t] = acc[o];
}

/// Thread `t`'s sums from their parts, added in order, and written.
WHALE_HD void sumParts(const Layout &l, const void *const *data, int64_t t,
                       int64_t parts, const float *partials) {
  for (int o = 0; o < l.outputs; ++o) {
    if (!l.sum[o])
      continue;
    float total = 0;
    for (int64_t part = 0; part < parts; ++part)
      total += partials[(o * parts + part) * l.threads + t];
    writeSum(l, data, t, o, total);
  }
}

/// Whether the row op's result is rounded to bf16 as it is stored, its
/// f32 row kept apart (in a scratch row of kMaxRoundedRow) meanwhile.
WHALE_HD bool roundsRow(const Layout &l) {
  return l.bf16[l.inputs + l.rowResult];
}

/// Where row `row`'s f32 values stay between the row op's passes: the
/// row op's output row, or `scratch` where the result is rounded.
WHALE_HD float *rowValues(const Layout &l, const void *const *data, int64_t row,
                          float *scratch) {
  if (roundsRow(l))
    return scratch;
  return static_cast<float *>(
             const_cast<void *>(data[l.inputs + l.rowResult])) +
         row * l.extents[l.rank - 1];
}

/// Stores the row op's result `v` as element c of row `row`, whose values
/// lie in `y` (rowValues).
WHALE_HD void storeRowResult(const Layout &l, const void *const *data,
                             int64_t row, int64_t c, float *y, float v) {
  if (roundsRow(l))
    storeOperand(l, data, l.inputs + l.rowResult,
                 row * l.extents[l.rank - 1] + c, v);
  else
    y[c] = v;
}

/// Row `row`'s element `c` of a program with a row op: its point's
/// instructions, its other results written, and the row op's input kept
/// in the row's values `y` (rowValues), which it returns.
WHALE_HD float rowElement(const Layout &l, const Instr *code, int count,
                          const void *const *data, int64_t row, int64_t c,
                          float *y) {
  float r[kMaxRegisters];
  int64_t at[kMaxOperands];
  const int64_t t = row * l.extents[l.rank - 1] + c;
  offsetsOf(l, t, 0, at);
  for (int i = 0; i < l.inputs; ++i)
    r[i] = loadOperand(l, data, i, at[i]);
  for (int k = 0; k < count; ++k)
    step(code[k], r);
  for (int o = 0; o < l.outputs; ++o)
    if (o != l.rowResult)
      storeOperand(l, data, l.inputs + o, at[l.inputs + o],
                   r[l.resultRegister[o]]);
  y[c] = r[l.rowInput];
  return r[l.rowInput];
}

/// Layernorm's element c of row `row` (values `y`), from the row's mean
/// and 1/std.
WHALE_HD void layerNormElement(const Layout &l, const void *const *data,
                               int64_t row, int64_t c, float mean, float rstd,
                               float *y) {
  const int64_t t = row * l.extents[l.rank - 1] + c;
  const float g = loadOperand(l, data, l.gamma, offsetOf(l, l.gamma, t, 0));
  const float b = loadOperand(l, data, l.beta, offsetOf(l, l.beta, t, 0));
  storeRowResult(l, data, row, c, y, (y[c] - mean) * rstd * g + b);
}

/// Row `row` of a program with a row op, one element after another: the
/// statistics in the runtime's order (the mean, then the variance about
/// it; the maximum, then the exponentials and their sum).
inline void runRow(const Layout &l, const Instr *code, int count,
                   const void *const *data, int64_t row) {
  const int64_t width = l.extents[l.rank - 1];
  std::vector<float> scratch(roundsRow(l) ? width : 0);
  float *y = rowValues(l, data, row, scratch.data());
  for (int64_t c = 0; c < width; ++c)
    rowElement(l, code, count, data, row, c, y);
  const float w = static_cast<float>(width);
  if (l.rowOp == RmsNorm) {
    // The squares in 16 lanes, then the lanes in order: the CPU's kernel's
    // sum (runtime/cpu/RmsNorm.cpp).
    float lanes[16] = {};
    for (int64_t c = 0; c < width; ++c)
      lanes[c % 16] += y[c] * y[c];
    float squares = 0;
    for (float lane : lanes)
      squares += lane;
    const float rstd = 1.0f / sqrtf(squares / w + l.eps);
    for (int64_t c = 0; c < width; ++c) {
      const int64_t t = row * width + c;
      const float g = loadOperand(l, data, l.gamma, offsetOf(l, l.gamma, t, 0));
      storeRowResult(l, data, row, c, y, y[c] * rstd * g);
    }
    return;
  }
  if (l.rowOp == LayerNorm) {
    float sum = 0;
    for (int64_t c = 0; c < width; ++c)
      sum += y[c];
    const float mean = sum / w;
    float squares = 0;
    for (int64_t c = 0; c < width; ++c)
      squares += (y[c] - mean) * (y[c] - mean);
    const float rstd = 1.0f / sqrtf(squares / w + l.eps);
    for (int64_t c = 0; c < width; ++c)
      layerNormElement(l, data, row, c, mean, rstd, y);
    return;
  }
  float mx = y[0];
  for (int64_t c = 0; c < width; ++c)
    mx = mx < y[c] ? y[c] : mx;
  const bool masked = mx == -INFINITY;
  float total = 0;
  for (int64_t c = 0; c < width; ++c) {
    y[c] = masked ? 0.0f : expf(y[c] - mx);
    total += y[c];
  }
  const float inv = total > 0 ? 1.0f / total : 0.0f;
  for (int64_t c = 0; c < width; ++c)
    storeRowResult(l, data, row, c, y, y[c] * inv);
}

/// Thread `t` of any program on the host: a point (and its sums) or, for
/// a program with a row op, a row.
inline void runOnHost(const Layout &l, const Instr *code, int count,
                      const void *const *data, int64_t t) {
  if (l.rowOp != NoRowOp)
    runRow(l, code, count, data, t);
  else
    runThread(l, code, count, data, t);
}

} // namespace whale::rt::fused

#endif
