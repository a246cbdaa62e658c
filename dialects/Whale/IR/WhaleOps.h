//===- WhaleOps.h - ops of the whale dialect ---------------------*- C++
//-*-===//

#ifndef WHALE_DIALECTS_WHALE_IR_WHALEOPS_H
#define WHALE_DIALECTS_WHALE_IR_WHALEOPS_H

#include "dialects/Whale/IR/WhaleDialect.h"
#include "dialects/Whale/Interfaces/CostOpInterface.h"
#include "dialects/Whale/Interfaces/GradientOpInterface.h"
#include "dialects/Whale/Interfaces/ScalarFormulaOpInterface.h"
#include "dialects/Whale/Interfaces/ShardingOpInterface.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <cstdint>
#include <optional>

namespace whale {
/// Bytes of the bucket a gather of `params` moves: each parameter's f32
/// bytes, or where `bf16` marks it, its bf16 halves two to an f32 word (an
/// odd count rounded up), as the runtime packs them.
int64_t gatheredBucketBytes(mlir::ValueRange params,
                            std::optional<llvm::ArrayRef<bool>> bf16);
} // namespace whale

#define GET_OP_CLASSES
#include "dialects/Whale/IR/WhaleOps.h.inc"

namespace whale {

/// An op's axis as written, mapped into [0, rank): -1 is the last
/// dimension. I64Attr reads back unsigned, so compare what this returns,
/// never the getter's value, with 0. The verifiers (normalizeAxis) have
/// checked it is in range.
inline int64_t resolveAxis(uint64_t written, int64_t rank) {
  const int64_t axis = static_cast<int64_t>(written);
  return axis < 0 ? axis + rank : axis;
}

/// The gradient of a unary function with a runtime kernel: a
/// whale.unary_grad of its `kind` (none where no gradient reaches it).
llvm::SmallVector<mlir::Value> unaryGradients(mlir::Operation *op,
                                              mlir::OpBuilder &b,
                                              UnaryKind kind, mlir::Value grad);

/// The gradient of an elementwise op defined by its formula: a
/// whale.formula_grad naming it (none where no gradient reaches it).
llvm::SmallVector<mlir::Value> formulaGradients(mlir::Operation *op,
                                                mlir::OpBuilder &b,
                                                mlir::Value grad);

} // namespace whale

#endif
