//===- ScalarFormulaOpInterface.h - an op's value per element ---*- C++ -*-===//
//
// The arithmetic an elementwise op's formula is written in: what every
// kernel generator (lowering/Transforms/Fusion/FusedScalars.h: LLVM's arith and
// math ops on the CPU, element-program instructions for a GPU) provides, on
// values it hands out as opaque handles.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_DIALECTS_WHALE_INTERFACES_SCALARFORMULAOPINTERFACE_H
#define WHALE_DIALECTS_WHALE_INTERFACES_SCALARFORMULAOPINTERFACE_H

#include "mlir/IR/OpDefinition.h"

#include <cstdint>

namespace whale {

/// One f32 value of a formula, as its builder numbers them; -1 for none.
struct ScalarHandle {
  int32_t id = -1;
  explicit operator bool() const { return id >= 0; }
};

/// The primitive arithmetic on f32 elements, in the order and with the
/// rounding of the kernels that compute it.
class ScalarBuilder {
public:
  virtual ~ScalarBuilder();
  virtual ScalarHandle c(double v) = 0;
  virtual ScalarHandle add(ScalarHandle x, ScalarHandle y) = 0;
  virtual ScalarHandle sub(ScalarHandle x, ScalarHandle y) = 0;
  virtual ScalarHandle mul(ScalarHandle x, ScalarHandle y) = 0;
  virtual ScalarHandle div(ScalarHandle x, ScalarHandle y) = 0;
  virtual ScalarHandle neg(ScalarHandle x) = 0;
  virtual ScalarHandle exp(ScalarHandle x) = 0;
  virtual ScalarHandle tanh(ScalarHandle x) = 0;
  virtual ScalarHandle log(ScalarHandle x) = 0;
  virtual ScalarHandle sqrt(ScalarHandle x) = 0;
  /// 1 where x > 0, else 0 (a condition for select).
  virtual ScalarHandle positive(ScalarHandle x) = 0;
  /// 1 where x < y, else 0.
  virtual ScalarHandle less(ScalarHandle x, ScalarHandle y) = 0;
  virtual ScalarHandle select(ScalarHandle cond, ScalarHandle x,
                              ScalarHandle y) = 0;

  /// 1 / (1 + exp(-x)), as every formula that needs it computes it.
  ScalarHandle sigmoid(ScalarHandle x) {
    return div(c(1), add(c(1), exp(neg(x))));
  }
};

} // namespace whale

#include "dialects/Whale/Interfaces/ScalarFormulaOpInterface.h.inc"

#endif
