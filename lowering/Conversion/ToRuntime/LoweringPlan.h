//===- LoweringPlan.h - What -whale-to-runtime decides before it converts -===//
//
// The conversion patterns see one op at a time. What needs the whole
// function is decided here first, on the whale IR: where each tensor is
// released, which reshapes take their input's memory, which Adam updates
// one call makes, each op's site for traces, and the kernel of every fused
// region. It also refuses, with the op's line, what cannot reach the
// runtime (bf16 where no bf16 kernel runs, element types it lacks).
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_LOWERING_CONVERSION_TORUNTIME_LOWERINGPLAN_H
#define WHALE_LOWERING_CONVERSION_TORUNTIME_LOWERINGPLAN_H

#include "lowering/Transforms/Fusion/FusedKernel.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

#include <map>
#include <string>
#include <vector>

namespace whale {

/// A fused region's generated kernel: its name, its launch, and the
/// element program GPUs run instead (empty where none runs it). Regions
/// that compute the same thing at the same shapes (each layer's) share one.
struct FusedCode {
  std::string name;
  FusedLaunch launch;
  std::vector<int64_t> program;
};

/// What an op's lowering releases after its calls: tensors of its results
/// nothing reads, and tensors of its operands it was the last to read.
struct Releases {
  llvm::SmallVector<unsigned, 2> results;
  llvm::SmallVector<unsigned, 4> operands;
};

class LoweringPlan {
public:
  /// `sites`: each op of a function's body marks its place for traces,
  /// and each Adam update is an event of its own.
  LoweringPlan(mlir::ModuleOp module, bool sites);

  /// Plans model function `fn`; fails with the first op's error that
  /// cannot reach the runtime.
  mlir::LogicalResult add(mlir::func::FuncOp fn);

  /// What `op` releases (empty for an op that releases nothing).
  const Releases &releasesOf(mlir::Operation *op) const;
  /// Whether reshape `op` is its input's last reader and takes its memory.
  bool takesInput(mlir::Operation *op) const {
    return reshapesTaking.contains(op);
  }
  /// The Adam updates one call makes, for the first of them; empty for an
  /// update made with an earlier one.
  llvm::ArrayRef<mlir::Operation *> adamRunAt(mlir::Operation *op) const;
  /// `op`'s place in its function's body, where sites are marked.
  std::optional<int64_t> siteOf(mlir::Operation *op) const;
  /// The kernel of fused region `op`.
  const FusedCode &kernelOf(mlir::Operation *op) const {
    return *fusedCode.lookup(op);
  }

private:
  void findAdamRuns(llvm::ArrayRef<mlir::Operation *> ops);
  void buildKernel(mlir::Operation *fused);
  mlir::ModuleOp kernelModule();

  mlir::ModuleOp module;
  bool sites;
  mlir::ModuleOp kernels; ///< whale_kernels, once a fused region needs it
  llvm::DenseMap<mlir::Operation *, Releases> releases;
  llvm::DenseSet<mlir::Operation *> reshapesTaking;
  llvm::DenseMap<mlir::Operation *, llvm::SmallVector<mlir::Operation *>>
      adamRuns;
  llvm::DenseMap<mlir::Operation *, int64_t> site;
  /// Kernels by what they compute at which types.
  std::map<std::string, FusedCode> kernelByKey;
  llvm::DenseMap<mlir::Operation *, const FusedCode *> fusedCode;
};

} // namespace whale

#endif // WHALE_LOWERING_CONVERSION_TORUNTIME_LOWERINGPLAN_H
