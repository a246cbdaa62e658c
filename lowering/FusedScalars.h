//===- FusedScalars.h - a fused region's ops on one element ----*- C++ -*-===//
//
// The scalar arithmetic a generated kernel does per element: each fusible
// whale op as arith and math ops on f32, in the order the runtime's own
// kernels compute it, so that fused and unfused programs agree.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_LOWERING_FUSEDSCALARS_H
#define WHALE_LOWERING_FUSEDSCALARS_H

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

/// Arithmetic on f32 scalars inside a linalg.generic body.
class Scalars {
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
  Value positive(Value x) {
    return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, x, c(0));
  }
  Value select(Value cond, Value x, Value y) {
    return arith::SelectOp::create(b, loc, cond, x, y);
  }
  /// std::max(acc, x), as the runtime takes a row's maximum.
  Value max(Value acc, Value x) {
    return select(
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, acc, x), x,
        acc);
  }
  /// tanh as GELU takes it: 1 - 2 / (exp(2u) + 1).
  Value geluTanh(Value v) {
    Value cube = mul(mul(mul(c(kGeluCubic), v), v), v);
    Value u = mul(c(kSqrt2OverPi), add(v, cube));
    return sub(c(1), div(c(2), add(exp(mul(c(2), u)), c(1))));
  }

  /// The element `op` computes from its operands' elements `in`.
  Value of(Operation *op, ArrayRef<Value> in) {
    return llvm::TypeSwitch<Operation *, Value>(op)
        .Case([&](AddOp) { return add(in[0], in[1]); })
        .Case([&](SubOp) { return sub(in[0], in[1]); })
        .Case([&](MulOp) { return mul(in[0], in[1]); })
        .Case([&](DivOp) { return div(in[0], in[1]); })
        .Case([&](NegOp) { return neg(in[0]); })
        .Case([&](ReluOp) { return select(positive(in[0]), in[0], c(0)); })
        .Case([&](TanhOp) { return math::TanhOp::create(b, loc, in[0]); })
        .Case([&](ExpOp) { return exp(in[0]); })
        .Case([&](LogOp) { return math::LogOp::create(b, loc, in[0]); })
        .Case([&](SqrtOp) { return math::SqrtOp::create(b, loc, in[0]); })
        .Case([&](GeluOp) {
          Value v = in[0];
          return mul(mul(c(0.5), v), add(c(1), geluTanh(v)));
        })
        .Case([&](UnaryGradOp g) { return unaryGrad(g.getKind(), in); })
        .Case([&](BinaryGradOp g) {
          return binaryGrad(g.getKind(), g.getOperand() == 0, in);
        })
        // A sum's element is what it adds (a bias gradient's is the
        // gradient at that element, above).
        .Case<ReduceSumOp, ReduceMeanOp>([&](Operation *) { return in[0]; })
        .Default([](Operation *) { return Value(); });
  }

  /// The element of every value `region` makes from its arguments'
  /// elements `args`, op by op, but for the ops `skip` names.
  llvm::DenseMap<Value, Value>
  elements(mlir::Block &region, mlir::ValueRange args,
           llvm::function_ref<bool(Operation *)> skip) {
    llvm::DenseMap<Value, Value> element;
    for (mlir::BlockArgument a : region.getArguments())
      element[a] = args[a.getArgNumber()];
    for (Operation &inner : region.without_terminator()) {
      if (skip(&inner))
        continue;
      llvm::SmallVector<Value> in;
      for (Value v : inner.getOperands())
        in.push_back(element.lookup(v));
      element[inner.getResult(0)] = of(&inner, in);
    }
    return element;
  }

private:
  Value unaryGrad(UnaryKind kind, ArrayRef<Value> in) {
    Value x = in[0], y = in[1], g = in[2];
    switch (kind) {
    case UnaryKind::neg:
      return neg(g);
    case UnaryKind::relu:
      return select(positive(x), g, c(0));
    case UnaryKind::tanh:
      return mul(g, sub(c(1), mul(y, y)));
    case UnaryKind::exp:
      return mul(g, y);
    case UnaryKind::log:
      return div(g, x);
    case UnaryKind::sqrt:
      return div(g, mul(c(2), y));
    case UnaryKind::gelu: {
      Value t = geluTanh(x);
      Value dInner =
          mul(c(kSqrt2OverPi), add(c(1), mul(mul(c(3 * kGeluCubic), x), x)));
      Value slope = mul(mul(mul(c(0.5), x), sub(c(1), mul(t, t))), dInner);
      return mul(g, add(mul(c(0.5), add(c(1), t)), slope));
    }
    }
    return Value();
  }
  Value binaryGrad(BinaryKind kind, bool forLhs, ArrayRef<Value> in) {
    Value x = in[0], y = in[1], g = in[2];
    switch (kind) {
    case BinaryKind::add:
      return g;
    case BinaryKind::sub:
      return forLhs ? g : neg(g);
    case BinaryKind::mul:
      return mul(g, forLhs ? y : x);
    case BinaryKind::div:
      return forLhs ? div(g, y) : div(mul(neg(g), x), mul(y, y));
    }
    return Value();
  }

  OpBuilder &b;
  Location loc;
};

} // namespace whale::kernel

#endif
