//===- FusedScalars.h - a fused region's ops on one element ----*- C++ -*-===//
//
// The scalar arithmetic a fused region does per element: each fusible
// whale op in the order the runtime's own kernels compute it, so that fused
// and unfused programs agree, as arith and math ops on f32 for the
// generated kernels, or as an element program's instructions.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_LOWERING_TRANSFORMS_FUSION_FUSEDSCALARS_H
#define WHALE_LOWERING_TRANSFORMS_FUSION_FUSEDSCALARS_H

#include "dialects/Whale/IR/WhaleOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/TypeSwitch.h"

namespace whale::kernel {

using mlir::ArrayRef;
using mlir::Location;
using mlir::OpBuilder;
using mlir::Operation;
using mlir::Value;
namespace arith = mlir::arith;
namespace math = mlir::math;

/// The constants of runtime/cpu/Elementwise.cpp's GELU, which the kernels
/// compute in the same order so that fused and unfused agree.
constexpr double kSqrt2OverPi = 0.7978845608028654;
constexpr double kGeluCubic = 0.044715;

/// What each fusible whale op computes on one element, written once over
/// the primitive arithmetic a `Derived` emitter provides on its values `V`
/// (c, add, sub, mul, div, neg, exp, tanh, log, sqrt, positive, less,
/// select, and roundBf16: the bf16 value nearest, still an f32): as arith
/// and math ops in a generated kernel (Scalars, below),
/// or as instructions of an element program (FusedProgram.cpp). An op
/// defined by its formula (ScalarFormulaOpInterface) is computed from it,
/// through the same primitives.
template <class Derived, class V> class ScalarRules {
public:
  /// std::max(acc, x), as the runtime takes a row's maximum.
  V max(V acc, V x) { return d().select(d().less(acc, x), x, acc); }
  /// tanh as GELU takes it: 1 - 2 / (exp(2u) + 1).
  V geluTanh(V v) {
    Derived &s = d();
    V cube = s.mul(s.mul(s.mul(s.c(kGeluCubic), v), v), v);
    V u = s.mul(s.c(kSqrt2OverPi), s.add(v, cube));
    return s.sub(s.c(1), s.div(s.c(2), s.add(s.exp(s.mul(s.c(2), u)), s.c(1))));
  }

  /// The element `op` computes from its operands' elements `in`; a null V
  /// for an op that is not fusible.
  V of(Operation *op, ArrayRef<V> in) {
    Derived &s = d();
    return llvm::TypeSwitch<Operation *, V>(op)
        .Case([&](AddOp) { return s.add(in[0], in[1]); })
        .Case([&](SubOp) { return s.sub(in[0], in[1]); })
        .Case([&](MulOp) { return s.mul(in[0], in[1]); })
        .Case([&](DivOp) { return s.div(in[0], in[1]); })
        .Case([&](NegOp) { return s.neg(in[0]); })
        .Case(
            [&](ReluOp) { return s.select(s.positive(in[0]), in[0], s.c(0)); })
        .Case([&](TanhOp) { return s.tanh(in[0]); })
        .Case([&](ExpOp) { return s.exp(in[0]); })
        .Case([&](LogOp) { return s.log(in[0]); })
        .Case([&](SqrtOp) { return s.sqrt(in[0]); })
        .Case([&](GeluOp) {
          V v = in[0];
          return s.mul(s.mul(s.c(0.5), v), s.add(s.c(1), geluTanh(v)));
        })
        // Values are f32 in registers; a cast to bf16 rounds one there (a
        // bf16 operand is widened as it is loaded, and rounded as stored).
        .Case([&](CastOp c) {
          return c.getType().getElementType().isBF16() ? s.roundBf16(in[0])
                                                       : in[0];
        })
        .Case([&](UnaryGradOp g) { return unaryGrad(g.getKind(), in); })
        .Case([&](BinaryGradOp g) {
          return binaryGrad(g.getKind(), g.getOperand() == 0, in);
        })
        // A sum's element is what it adds (a bias gradient's is the
        // gradient at that element, above).
        .template Case<ReduceSumOp, ReduceMeanOp>(
            [&](Operation *) { return in[0]; })
        // The ops defined by their formulas, and their gradients.
        .Case([&](FormulaGradOp g) {
          ScalarFormulaOpInterface::Concept *formula = g.getFormula();
          if (!formula)
            return V();
          Formula f(d());
          return f.get(formula->buildScalarGradient(
              f, f.put(in[0]), f.put(in[1]), f.put(in[2])));
        })
        .Default([&](Operation *other) {
          if (!llvm::isa<ScalarFormulaOpInterface>(other))
            return V();
          Formula f(d());
          ScalarFormulaOpInterface::Concept *formula =
              other->getName().getInterface<ScalarFormulaOpInterface>();
          return f.get(formula->buildScalar(f, f.put(in[0])));
        });
  }

  /// The element of every value `region` makes from its arguments'
  /// elements `args`, op by op, but for the ops `skip` names.
  llvm::DenseMap<Value, V>
  elements(mlir::Block &region, ArrayRef<V> args,
           llvm::function_ref<bool(Operation *)> skip) {
    llvm::DenseMap<Value, V> element;
    for (mlir::BlockArgument a : region.getArguments())
      element[a] = args[a.getArgNumber()];
    for (Operation &inner : region.without_terminator()) {
      if (skip(&inner))
        continue;
      llvm::SmallVector<V> in;
      for (Value v : inner.getOperands())
        in.push_back(element.lookup(v));
      element[inner.getResult(0)] = of(&inner, in);
    }
    return element;
  }

private:
  Derived &d() { return static_cast<Derived &>(*this); }

  /// An op's formula written over ScalarBuilder, computed by the emitter:
  /// each handle numbers a value of the emitter's.
  class Formula : public ScalarBuilder {
  public:
    explicit Formula(Derived &s) : s(s) {}
    ScalarHandle put(V v) {
      values.push_back(v);
      return ScalarHandle{static_cast<int32_t>(values.size() - 1)};
    }
    V get(ScalarHandle h) const { return h ? values[h.id] : V(); }

    ScalarHandle c(double v) override { return put(s.c(v)); }
    ScalarHandle add(ScalarHandle x, ScalarHandle y) override {
      return put(s.add(get(x), get(y)));
    }
    ScalarHandle sub(ScalarHandle x, ScalarHandle y) override {
      return put(s.sub(get(x), get(y)));
    }
    ScalarHandle mul(ScalarHandle x, ScalarHandle y) override {
      return put(s.mul(get(x), get(y)));
    }
    ScalarHandle div(ScalarHandle x, ScalarHandle y) override {
      return put(s.div(get(x), get(y)));
    }
    ScalarHandle neg(ScalarHandle x) override { return put(s.neg(get(x))); }
    ScalarHandle exp(ScalarHandle x) override { return put(s.exp(get(x))); }
    ScalarHandle tanh(ScalarHandle x) override { return put(s.tanh(get(x))); }
    ScalarHandle log(ScalarHandle x) override { return put(s.log(get(x))); }
    ScalarHandle sqrt(ScalarHandle x) override { return put(s.sqrt(get(x))); }
    ScalarHandle positive(ScalarHandle x) override {
      return put(s.positive(get(x)));
    }
    ScalarHandle less(ScalarHandle x, ScalarHandle y) override {
      return put(s.less(get(x), get(y)));
    }
    ScalarHandle select(ScalarHandle cond, ScalarHandle x,
                        ScalarHandle y) override {
      return put(s.select(get(cond), get(x), get(y)));
    }

  private:
    Derived &s;
    llvm::SmallVector<V> values;
  };

  V unaryGrad(UnaryKind kind, ArrayRef<V> in) {
    Derived &s = d();
    V x = in[0], y = in[1], g = in[2];
    switch (kind) {
    case UnaryKind::neg:
      return s.neg(g);
    case UnaryKind::relu:
      return s.select(s.positive(x), g, s.c(0));
    case UnaryKind::tanh:
      return s.mul(g, s.sub(s.c(1), s.mul(y, y)));
    case UnaryKind::exp:
      return s.mul(g, y);
    case UnaryKind::log:
      return s.div(g, x);
    case UnaryKind::sqrt:
      return s.div(g, s.mul(s.c(2), y));
    case UnaryKind::gelu: {
      V t = geluTanh(x);
      V dInner = s.mul(s.c(kSqrt2OverPi),
                       s.add(s.c(1), s.mul(s.mul(s.c(3 * kGeluCubic), x), x)));
      V slope =
          s.mul(s.mul(s.mul(s.c(0.5), x), s.sub(s.c(1), s.mul(t, t))), dInner);
      return s.mul(g, s.add(s.mul(s.c(0.5), s.add(s.c(1), t)), slope));
    }
    }
    return V();
  }
  V binaryGrad(BinaryKind kind, bool forLhs, ArrayRef<V> in) {
    Derived &s = d();
    V x = in[0], y = in[1], g = in[2];
    switch (kind) {
    case BinaryKind::add:
      return g;
    case BinaryKind::sub:
      return forLhs ? g : s.neg(g);
    case BinaryKind::mul:
      return s.mul(g, forLhs ? y : x);
    case BinaryKind::div:
      return forLhs ? s.div(g, y) : s.div(s.mul(s.neg(g), x), s.mul(y, y));
    }
    return V();
  }
};

/// Arithmetic on f32 scalars inside a linalg.generic body.
class Scalars : public ScalarRules<Scalars, Value> {
public:
  Scalars(OpBuilder &b, Location loc) : b(b), loc(loc) {}

  Value c(double v) {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
  }
  Value add(Value x, Value y) { return arith::AddFOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return arith::SubFOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulFOp::create(b, loc, x, y); }
  Value div(Value x, Value y) { return arith::DivFOp::create(b, loc, x, y); }
  Value neg(Value x) { return arith::NegFOp::create(b, loc, x); }
  Value exp(Value x) { return math::ExpOp::create(b, loc, x); }
  Value tanh(Value x) { return math::TanhOp::create(b, loc, x); }
  Value log(Value x) { return math::LogOp::create(b, loc, x); }
  Value sqrt(Value x) { return math::SqrtOp::create(b, loc, x); }
  Value positive(Value x) {
    return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, x, c(0));
  }
  Value less(Value x, Value y) {
    return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, x, y);
  }
  Value select(Value cond, Value x, Value y) {
    return arith::SelectOp::create(b, loc, cond, x, y);
  }
  /// runtime/ops/Bf16.h's roundToBf16 in integer arithmetic, so the
  /// generated kernels round as the runtime's cast does, bit for bit
  /// (NaN and infinities included), with no bf16 type for LLVM to lower.
  Value roundBf16(Value x) {
    auto i32 = b.getI32Type();
    auto k = [&](uint32_t v) {
      return arith::ConstantOp::create(
          b, loc, b.getI32IntegerAttr(static_cast<int32_t>(v)));
    };
    Value u = arith::BitcastOp::create(b, loc, i32, x);
    Value exponent = arith::AndIOp::create(b, loc, u, k(0x7f800000u));
    Value special = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                          exponent, k(0x7f800000u));
    Value mantissa = arith::AndIOp::create(b, loc, u, k(0x007fffffu));
    Value nan = arith::AndIOp::create(
        b, loc, special,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, mantissa,
                              k(0)));
    Value quiet = arith::OrIOp::create(b, loc, u, k(0x00400000u));
    Value lsb = arith::AndIOp::create(
        b, loc, arith::ShRUIOp::create(b, loc, u, k(16)), k(1));
    Value rounded = arith::AddIOp::create(
        b, loc, u, arith::AddIOp::create(b, loc, k(0x7fffu), lsb));
    Value kept = arith::SelectOp::create(
        b, loc, special, arith::SelectOp::create(b, loc, nan, quiet, u),
        rounded);
    Value cut = arith::AndIOp::create(b, loc, kept, k(0xffff0000u));
    return arith::BitcastOp::create(b, loc, b.getF32Type(), cut);
  }
  /// The f32 value of bf16 bits `bits` (an i16 loaded from bf16 storage).
  Value widenBf16(Value bits) {
    auto i32 = b.getI32Type();
    Value u = arith::ExtUIOp::create(b, loc, i32, bits);
    Value shifted = arith::ShLIOp::create(
        b, loc, u, arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(16)));
    return arith::BitcastOp::create(b, loc, b.getF32Type(), shifted);
  }
  /// The bits bf16 storage holds for `x`, rounded to nearest.
  Value bf16Bits(Value x) {
    auto i32 = b.getI32Type();
    Value u = arith::BitcastOp::create(b, loc, i32, roundBf16(x));
    Value high = arith::ShRUIOp::create(
        b, loc, u, arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(16)));
    return arith::TruncIOp::create(b, loc, b.getI16Type(), high);
  }

  /// The element type a generated kernel's memref has for a region
  /// operand of tensor type `t`: f32, or bf16 storage as its bits (i16).
  static mlir::Type memoryElement(mlir::Type t) {
    auto tensor = mlir::cast<mlir::RankedTensorType>(t);
    mlir::Type e = tensor.getElementType();
    return e.isBF16() ? mlir::IntegerType::get(t.getContext(), 16) : e;
  }
  /// An element loaded from an operand of tensor type `t`, as an f32.
  Value loaded(Value element, mlir::Type t) {
    return element.getType().isInteger(16) ? widenBf16(element) : element;
  }
  /// What a kernel stores of f32 `v` into an operand of tensor type `t`.
  Value toStore(Value v, mlir::Type t) {
    return memoryElement(t).isInteger(16) ? bf16Bits(v) : v;
  }

  using ScalarRules::elements;
  llvm::DenseMap<Value, Value>
  elements(mlir::Block &region, mlir::ValueRange args,
           llvm::function_ref<bool(Operation *)> skip) {
    llvm::SmallVector<Value> values(args);
    return ScalarRules::elements(region, values, skip);
  }

private:
  OpBuilder &b;
  Location loc;
};

} // namespace whale::kernel

#endif
