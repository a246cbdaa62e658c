//===- Passes.h - passes over the whale dialect ------------------*- C++
//-*-===//

#ifndef WHALE_LOWERING_PASSES_H
#define WHALE_LOWERING_PASSES_H

#include "dialects/Whale/IR/TrainAttrs.h"
#include "dialects/Whale/IR/WhaleOps.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir {
class DialectRegistry;
class MLIRContext;
} // namespace mlir
namespace mlir::func {
class FuncOp;
}

namespace whale {

/// Loads the dialects the lowering to the runtime builds (the LLVM
/// dialect), so that passes running on the context's threads find them
/// loaded. Here and not in every pass's header: the LLVM dialect's header
/// alone takes about 12 s to compile.
void loadRuntimeLoweringDialects(mlir::MLIRContext &context);
/// The same dialects, for a tool's registry (whale-opt).
void insertRuntimeLoweringDialects(mlir::DialectRegistry &registry);

/// Moves every TaskGraph's body in front of it and replaces its results by
/// the values its yield hands on (one device: the strategy does not matter).
void inlineTaskGraphs(mlir::func::FuncOp fn);

/// Inlines every call of a function `module` defines (the steps
/// -whale-rank-programs outlines), each call replaced by its callee's body,
/// and erases the private callees left without a call. The lowering to the
/// runtime does this first.
mlir::LogicalResult inlineStepCalls(mlir::ModuleOp module);

/// On a call of a step: the rows of the rank's batch before its
/// micro-batch's, which its dropouts draw after (a dropout draws by its
/// elements' rows in the global batch; the callee's draw as the first
/// micro-batch's).
inline constexpr llvm::StringLiteral kStepRowsAttr = "whale.row_offset";

/// On an op that recomputes a checkpoint's activations (activation
/// recomputation): keeps -cse from merging it with the forward's op.
inline constexpr llvm::StringLiteral kRecomputedAttr = "whale.recomputed";

/// A step's `body` cloned at b's insertion point for `args` (cloneBody),
/// its dropouts drawing `rows` rows further on; what it returns.
llvm::SmallVector<mlir::Value> inlineStep(mlir::OpBuilder &b, mlir::Block &body,
                                          mlir::ValueRange args, int64_t rows);

/// Whether the runtime writes `op`'s results into its operands' tensors
/// (a collective's sums, clipping's scaled gradients).
bool writesOperandsInPlace(mlir::Operation *op);
/// Gives each such op of `fn` a whale.copy of every operand something else
/// still needs (-whale-copy-written-operands).
void copyWrittenOperands(mlir::func::FuncOp fn);

/// Reverse mode over `forward` (in program order): starting from the
/// gradients already in `gradients` (of results), adds the gradient of every
/// value the ops read, built at b's insertion point; gradients of a value
/// read twice are added.
mlir::LogicalResult
backpropagate(mlir::OpBuilder &b, llvm::ArrayRef<mlir::Operation *> forward,
              llvm::DenseMap<mlir::Value, mlir::Value> &gradients);

/// The same with activation recomputation (lowering/Recompute.h): one
/// segment of `forward` at a time (each ending at one of `ends`, as
/// plan::recomputeSegments cuts it), last first, each segment's ops built
/// again at b's insertion point and differentiated in their place, so the
/// gradients read the copies and the forward's own values die with the
/// forward, except those a later segment reads (the checkpoints).
/// `gradients` is keyed by the forward's values, before and after.
mlir::LogicalResult
backpropagateRecomputing(mlir::OpBuilder &b,
                         llvm::ArrayRef<mlir::Operation *> forward,
                         llvm::ArrayRef<size_t> ends,
                         llvm::DenseMap<mlir::Value, mlir::Value> &gradients);

/// The train block's clipping (over `clipGroup`'s ranks when set) and
/// optimizer update of each parameter with its gradient, at b's insertion
/// point. The updates consume the clipped gradients; the lowering copies any
/// gradient something else still reads (-whale-copy-written-operands).
mlir::LogicalResult emitOptimizerUpdates(mlir::OpBuilder &b, mlir::Location loc,
                                         mlir::Operation *diagnose,
                                         const TrainBlock &train,
                                         llvm::ArrayRef<ParamOp> params,
                                         llvm::ArrayRef<mlir::Value> gradients,
                                         mlir::StringAttr clipGroup);

#define GEN_PASS_DECL
#include "lowering/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "lowering/Passes.h.inc"

} // namespace whale

#endif
