//===- ElementProgramBuilder.cpp - fused regions as element programs ------===//

#include "lowering/Transforms/Fusion/ElementProgramBuilder.h"

#include "lowering/Transforms/Fusion/FusedScalars.h"
#include "lowering/Transforms/Fusion/FusedSpace.h"
#include "runtime/ops/ElementProgram.h"

#include <cstring>
#include <limits>
#include <map>

using namespace mlir;
namespace program = whale::rt::fused;

namespace whale {
namespace {

/// The region's arithmetic as instructions over values numbered in the
/// order they are made (the inputs' elements first); registers are dealt
/// out after, once each value's last reader is known.
class ProgramScalars : public kernel::ScalarRules<ProgramScalars, int32_t> {
public:
  explicit ProgramScalars(int32_t inputs) : values(inputs) {}

  int32_t c(double v) {
    float f = static_cast<float>(v);
    uint32_t bits;
    std::memcpy(&bits, &f, sizeof bits);
    auto [it, added] = constants.try_emplace(bits, 0);
    if (added)
      it->second = emit(program::Const, static_cast<int32_t>(bits), -1, -1);
    return it->second;
  }
  int32_t add(int32_t x, int32_t y) { return emit(program::Add, x, y); }
  int32_t sub(int32_t x, int32_t y) { return emit(program::Sub, x, y); }
  int32_t mul(int32_t x, int32_t y) { return emit(program::Mul, x, y); }
  int32_t div(int32_t x, int32_t y) { return emit(program::Div, x, y); }
  int32_t neg(int32_t x) { return emit(program::Neg, x); }
  int32_t exp(int32_t x) { return emit(program::Exp, x); }
  int32_t tanh(int32_t x) { return emit(program::Tanh, x); }
  int32_t log(int32_t x) { return emit(program::Log, x); }
  int32_t sqrt(int32_t x) { return emit(program::Sqrt, x); }
  int32_t positive(int32_t x) { return emit(program::Positive, x); }
  int32_t less(int32_t x, int32_t y) { return emit(program::Less, x, y); }
  int32_t select(int32_t cond, int32_t x, int32_t y) {
    return emit(program::Select, cond, x, y);
  }
  int32_t roundBf16(int32_t x) { return emit(program::Round, x); }

  /// Each value gets a register that no value still to be read holds;
  /// `results` stay to the end. False where more than the interpreter's
  /// registers would be live at once.
  bool allocate(ArrayRef<int32_t> results, int32_t inputs,
                std::vector<program::Instr> &out, int32_t &registers,
                SmallVector<int32_t> &resultRegisters) {
    const int32_t n = values;
    std::vector<int32_t> last(n, -1);
    for (size_t i = 0; i < code.size(); ++i)
      for (int32_t v : operands(code[i]))
        last[v] = static_cast<int32_t>(i);
    for (int32_t r : results)
      last[r] = std::numeric_limits<int32_t>::max();
    std::vector<int32_t> reg(n, -1), free;
    registers = inputs; // the inputs' elements are loaded into 0..inputs-1
    for (int32_t v = 0; v < inputs; ++v)
      reg[v] = v;
    auto release = [&](int32_t v, size_t at) {
      if (v >= 0 && last[v] == static_cast<int32_t>(at))
        free.push_back(reg[v]);
    };
    for (size_t i = 0; i < code.size(); ++i) {
      program::Instr in = code[i];
      // Operands read here for the last time free their registers for
      // this instruction's own result.
      SmallVector<int32_t, 3> read = operands(in);
      if (in.op != program::Const)
        for (int32_t *o : {&in.a, &in.b, &in.c})
          if (*o >= 0)
            *o = reg[*o];
      llvm::sort(read);
      read.erase(std::unique(read.begin(), read.end()), read.end());
      for (int32_t v : read)
        release(v, i);
      if (free.empty())
        free.push_back(registers++);
      const int32_t value = in.dst;
      reg[value] = free.back();
      free.pop_back();
      in.dst = reg[value];
      out.push_back(in);
      if (last[value] < 0) // read by nothing
        free.push_back(reg[value]);
    }
    if (registers > program::kMaxRegisters)
      return false;
    for (int32_t r : results)
      resultRegisters.push_back(reg[r]);
    return true;
  }

private:
  int32_t emit(int32_t op, int32_t a, int32_t b = -1, int32_t c = -1) {
    program::Instr in{op, values++, a, b, c, 0.0f};
    code.push_back(in);
    return in.dst;
  }
  static SmallVector<int32_t, 3> operands(const program::Instr &in) {
    SmallVector<int32_t, 3> out;
    if (in.op == program::Const)
      return out;
    for (int32_t v : {in.a, in.b, in.c})
      if (v >= 0)
        out.push_back(v);
    return out;
  }

  int32_t values;
  std::vector<program::Instr> code;
  std::map<uint32_t, int32_t> constants;
};

/// A region of rows keeps its last dimension apart (the row op runs along
/// it): its space is the iteration shape as it is, each input read where it
/// has the dimension's extent.
Collapsed rowSpace(ArrayRef<int64_t> shape, TypeRange inputs, size_t results) {
  Collapsed out;
  out.extents.assign(shape.begin(), shape.end());
  for (Type t : inputs) {
    ArrayRef<int64_t> in = cast<RankedTensorType>(t).getShape();
    const size_t lead = shape.size() - in.size();
    SmallVector<bool> reads;
    for (size_t d = 0; d < shape.size(); ++d)
      reads.push_back(d >= lead && in[d - lead] == shape[d]);
    out.reads.push_back(std::move(reads));
  }
  out.keeps.assign(results, SmallVector<bool>(shape.size(), true));
  return out;
}

} // namespace

std::vector<int64_t> buildFusedProgram(FusedOp op, std::string &why,
                                       bool *tooLong) {
  Operation *rowOp = op.getRowOp();
  SmallVector<int64_t> shape = op.getIterationShape();
  if (rowOp && shape.empty()) {
    why = "its row op has no row";
    return {};
  }
  SmallVector<ResultShape> results = resultShapes(op, shape);
  Collapsed space =
      rowOp ? rowSpace(shape, op.getInputs().getTypes(), results.size())
            : collapse(shape, op.getInputs().getTypes(), results);
  const int64_t rank = space.extents.size();
  const int32_t inputs = op.getNumOperands();
  const int32_t outputs = results.size();
  if (rank > rt::cuda::kMaxRank || inputs + outputs > program::kMaxOperands) {
    why = "it has more dimensions or operands than a thread holds";
    return {};
  }
  // One set of summed dimensions for every sum: a thread owns one element
  // of each.
  const SmallVector<bool> *summed = nullptr;
  for (auto [r, keeps] : llvm::zip(results, space.keeps))
    if (r.reduced) {
      if (summed && *summed != keeps) {
        why = "its sums sum over different dimensions";
        return {};
      }
      summed = &keeps;
    }

  Block &region = op.getBody().front();
  ProgramScalars s(inputs);
  SmallVector<int32_t> args;
  for (int32_t i = 0; i < inputs; ++i)
    args.push_back(i);
  // The row op is not an element's: the region's points compute its input.
  // Nor is its rounding to bf16: the program rounds the row op's result as
  // it stores it, where the result is bf16.
  static_assert(FusedOp::kMaxRoundedRowWidth == program::kMaxRoundedRow,
                "the dialect and the programs round rows of one width");
  Operation *rounding = rowOp ? FusedOp::getRowRounding(rowOp) : nullptr;
  llvm::DenseMap<Value, int32_t> element = s.elements(
      region, args, [&](Operation *o) { return o == rowOp || o == rounding; });
  int32_t rowInput = -1;
  if (rowOp) {
    auto it = element.find(rowOp->getOperand(0));
    if (it == element.end() || it->second < 0) {
      why = "its row op's input has no element";
      return {};
    }
    rowInput = it->second;
  }
  SmallVector<int32_t> yielded;
  int64_t rowResult = -1;
  for (auto [i, v] : llvm::enumerate(region.getTerminator()->getOperands())) {
    if (rowOp && (v == rowOp->getResult(0) ||
                  (rounding && v == rounding->getResult(0)))) {
      rowResult = static_cast<int64_t>(i);
      yielded.push_back(rowInput); // its register: the input, kept
      continue;
    }
    auto it = element.find(v);
    if (it == element.end() || it->second < 0) {
      why = "an op of its body has no element rule";
      return {};
    }
    yielded.push_back(it->second);
  }
  std::vector<program::Instr> code;
  int32_t registers = 0;
  SmallVector<int32_t> resultRegisters;
  SmallVector<int32_t> live(yielded);
  if (rowOp && rowResult < 0)
    live.push_back(rowInput); // a row op no result is: nothing reads it
  if (!s.allocate(live, inputs, code, registers, resultRegisters)) {
    why = "it holds more values at once than a thread's registers";
    if (tooLong)
      *tooLong = true;
    return {};
  }
  // More instructions than the interpreter takes: no program, so that the
  // CPU runs the region's generated kernel, rather than a program the
  // runtime refuses in the first step (issue 92 item 12).
  if (code.size() > static_cast<size_t>(program::kMaxInstructions)) {
    why = "it has more instructions than an element program holds";
    if (tooLong)
      *tooLong = true;
    return {};
  }

  std::vector<int64_t> words = {program::kMagic, rank};
  words.insert(words.end(), space.extents.begin(), space.extents.end());
  words.insert(words.end(),
               {inputs, outputs, registers, static_cast<int64_t>(code.size())});
  auto typeOf = [](Type t) -> int64_t {
    return cast<RankedTensorType>(t).getElementType().isBF16()
               ? program::Bf16Operand
               : program::F32Operand;
  };
  for (auto [reads, t] : llvm::zip(space.reads, op.getInputs().getTypes())) {
    words.insert(words.end(), reads.begin(), reads.end());
    words.push_back(typeOf(t));
  }
  for (auto [i, r] : llvm::enumerate(results)) {
    words.insert(words.end(), space.keeps[i].begin(), space.keeps[i].end());
    words.push_back(r.mean ? 1 : 0);
    words.push_back(resultRegisters[i]);
    words.push_back(typeOf(op.getResultTypes()[i]));
  }
  if (!rowOp) {
    words.push_back(program::NoRowOp);
  } else if (rowResult < 0) {
    why = "its row op makes none of its results";
    return {};
  } else {
    // The row op's input register: the one its result was given.
    const int64_t input = resultRegisters[rowResult];
    if (auto ln = dyn_cast<LayerNormOp>(rowOp)) {
      float eps = static_cast<float>(ln.getEps().convertToDouble());
      uint32_t bits;
      std::memcpy(&bits, &eps, sizeof bits);
      words.insert(words.end(),
                   {program::LayerNorm, rowResult, input,
                    cast<BlockArgument>(ln.getGamma()).getArgNumber(),
                    cast<BlockArgument>(ln.getBeta()).getArgNumber(),
                    static_cast<int64_t>(bits)});
    } else if (auto rms = dyn_cast<RmsNormOp>(rowOp)) {
      // Its weight in gamma's place and beta's (which it does not read).
      float eps = static_cast<float>(rms.getEps().convertToDouble());
      uint32_t bits;
      std::memcpy(&bits, &eps, sizeof bits);
      const int64_t weight =
          cast<BlockArgument>(rms.getWeight()).getArgNumber();
      words.insert(words.end(), {program::RmsNorm, rowResult, input, weight,
                                 weight, static_cast<int64_t>(bits)});
    } else {
      words.insert(words.end(), {program::Softmax, rowResult, input});
    }
  }
  for (const program::Instr &in : code)
    words.insert(words.end(), {in.op, in.dst, in.a, in.b, in.c});
  return words;
}

} // namespace whale
