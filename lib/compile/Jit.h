//===- Jit.h - whale IR to native code bound to the runtime ------*- C++
//-*-===//
//
// The one place that sees both MLIR and the runtime: it lowers a whale
// module with -whale-to-runtime, compiles it with LLVM's LLJIT and
// binds every whale_rt_* symbol by an explicit map, so a host application
// needs no special link flags.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_LIB_COMPILE_JIT_H
#define WHALE_LIB_COMPILE_JIT_H

#include "runtime/WhaleRuntime.h"
#include "runtime/run/RankStep.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"

#include <memory>
#include <string>

namespace llvm {
class LLVMContext;
class Module;
class TargetMachine;
template <typename T> class SmallVectorImpl;
namespace orc {
class LLJIT;
}
} // namespace llvm

namespace whale {

/// A tensor of `type` (f32 or i32) in `ctx`, for a compiled program's
/// inputs; null with `error` set for other element types or when the
/// context refuses it.
whale_rt_tensor *newTensor(whale_rt_context *ctx, mlir::RankedTensorType type,
                           std::string &error);

/// A module lowered to LLVM IR: `program`, the model functions (runs of
/// runtime calls, compiled fast), and `kernels`, the loops generated for
/// its fused regions (null when it has none), which are worth LLVM's
/// optimizer.
struct LoweredModule {
  std::unique_ptr<llvm::Module> program, kernels;
};

/// A copy of `module` lowered to the runtime's C ABI and translated to LLVM
/// IR in `llvmContext`; a null program with `error` set when that fails.
/// With `sites`, each op reports its place in its function to the
/// runtime's trace (whale_rt_set_site).
LoweredModule lowerToLLVM(mlir::ModuleOp module, llvm::LLVMContext &llvmContext,
                          std::string &error, bool sites = false);

/// `module` compiled by `machine` to an object file in `object`, after
/// LLVM's O3 pipeline (vectorizing for `machine`) when `optimize`; "" or
/// why not. The fused regions' kernels are optimized; a program, a run of
/// runtime calls, is not.
std::string emitObjectCode(llvm::Module &module, llvm::TargetMachine &machine,
                           bool optimize, llvm::SmallVectorImpl<char> &object);

/// A compiled model: `int32_t entry(ctx, inputs, result)` per model.
class JitProgram {
public:
  using Entry = int32_t (*)(whale_rt_context *, whale_rt_tensor *const *,
                            whale_rt_tensor **);

  /// Lowers a copy of `module` and compiles it; null with `error` set when
  /// lowering or compilation fails.
  /// With `sites`, each op reports its place in its function to the
  /// runtime's trace (whale_rt_set_site).
  static std::unique_ptr<JitProgram> compile(mlir::ModuleOp module,
                                             std::string &error,
                                             bool sites = false);
  ~JitProgram();

  /// The entry point of model `name`; null when there is none.
  Entry lookup(const std::string &name) const;

private:
  JitProgram() = default;
  std::unique_ptr<llvm::orc::LLJIT> jit;
};

} // namespace whale

#endif
