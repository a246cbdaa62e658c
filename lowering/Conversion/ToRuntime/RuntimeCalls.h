//===- RuntimeCalls.h - Emitting calls of the runtime's C ABI ---*- C++ -*-===//
//
// What every conversion pattern of -whale-to-runtime emits with: the
// runtime's declarations and constant globals, made once for the module
// (RuntimeSymbols), and the calls, constants and tensors of one op at the
// rewriter's insertion point (RuntimeCalls).
//
// A call that can fail is emitted straight-line and marked; the pass
// branches on every marked status once all ops are converted
// (materializeStatusChecks), so a pattern never splits the block it is
// converting (each split would move every op after it).
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_LOWERING_CONVERSION_TORUNTIME_RUNTIMECALLS_H
#define WHALE_LOWERING_CONVERSION_TORUNTIME_RUNTIMECALLS_H

#include "lowering/Conversion/ToRuntime/RuntimeAbi.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/DialectConversion.h"
#include "llvm/ADT/StringMap.h"

#include <map>
#include <optional>
#include <string>

namespace whale {

class LoweringPlan;

/// The handles an op's lowering hands back for its results, in order.
using Handles = llvm::SmallVector<mlir::Value, 2>;

/// The attribute that marks a call whose status is checked after the
/// conversion; materializeStatusChecks removes it.
inline constexpr llvm::StringLiteral kStatusCallAttr = "whale.status_call";

/// The runtime's declarations and the constant globals of one module, each
/// made on first use. Made with a builder of their own at the module's
/// start: they are never rolled back with a pattern, so the maps below
/// stay valid. Kept in maps because a lookup in the module scans it, once
/// per op of a long step function (quadratic in the script's size).
class RuntimeSymbols {
public:
  explicit RuntimeSymbols(mlir::ModuleOp module);

  /// The declaration of runtime function `name`.
  mlir::LLVM::LLVMFuncOp declare(llvm::StringRef name, mlir::Type result,
                                 llvm::ArrayRef<mlir::Type> params);
  /// A constant global holding `value`, shared by equal `key`s.
  mlir::LLVM::GlobalOp global(const std::string &key, mlir::Type type,
                              mlir::Attribute value);

  /// Set when a call's arguments disagreed with the C declaration: the
  /// lowering's own bug, reported where it happened; the pass fails.
  bool abiMismatch = false;

private:
  mlir::ModuleOp module;
  std::map<std::string, mlir::LLVM::GlobalOp> globals;
  llvm::StringMap<mlir::LLVM::LLVMFuncOp> functions;
};

/// Emits one op's runtime calls at `rewriter`'s insertion point, inside a
/// lowered model function whose context is `ctx` and whose out-parameter
/// slot for new handles is `slot`.
class RuntimeCalls {
public:
  RuntimeCalls(mlir::ConversionPatternRewriter &rewriter, mlir::Location loc,
               RuntimeSymbols &symbols, const LoweringPlan &plan,
               mlir::Value ctx, mlir::Value slot);

  mlir::ConversionPatternRewriter &rewriter;
  mlir::Location loc;
  const LoweringPlan &plan;
  /// The run's context, every call's first argument.
  const mlir::Value ctx;

  // --- constants ---
  mlir::Value i32(int64_t v);
  mlir::Value i64(int64_t v);
  mlir::Value f64(double v);
  mlir::Value f64(const llvm::APFloat &v) { return f64(v.convertToDouble()); }
  mlir::Value null();
  /// Addresses of constant arrays (null when empty) and a NUL-ended string.
  mlir::Value i64Array(llvm::ArrayRef<int64_t> values);
  mlir::Value i32Array(llvm::ArrayRef<int32_t> values);
  template <class Range> mlir::Value i32ArrayOf(const Range &values) {
    return i32Array(llvm::SmallVector<int32_t>(values.begin(), values.end()));
  }
  mlir::Value f64Array(llvm::ArrayRef<double> values);
  mlir::Value string(llvm::StringRef s);
  /// Uneven shards' weights, or null for equal parts.
  mlir::Value weights(std::optional<llvm::ArrayRef<int64_t>> weights);
  /// The handle of `v`, an operand of an op converted before (another
  /// op's operand than the one being lowered).
  mlir::Value handleOf(mlir::Value v) { return rewriter.getRemappedValue(v); }
  /// `handles` in an array on the stack.
  mlir::Value handleArray(mlir::ValueRange handles);

  // --- calls ---
  /// Calls a runtime function that returns a status, checked later.
  void call(const abi::Function &fn, llvm::ArrayRef<mlir::Value> args);
  /// Calls a runtime function that cannot fail.
  void callVoid(const abi::Function &fn, llvm::ArrayRef<mlir::Value> args);
  /// Where a call writes a new handle, and the handle it wrote there.
  mlir::Value slotOut() const { return slot; }
  mlir::Value slotHandle();
  /// The declaration of a function the lowering generated (a kernel).
  mlir::LLVM::LLVMFuncOp declare(llvm::StringRef name, mlir::Type result,
                                 llvm::ArrayRef<mlir::Type> params) {
    return symbols.declare(name, result, params);
  }
  /// A new tensor of `type` (its element type checked by the plan).
  mlir::Value tensor(mlir::RankedTensorType type);
  /// A new tensor for each result of `op`.
  Handles tensorsFor(mlir::Operation *op);
  /// The plainest lowering: a new tensor for each result of `op`, then
  /// `fn(ctx, operands..., results...)`; the results' handles.
  Handles callOnOperandsAndResults(mlir::Operation *op, mlir::ValueRange in,
                                   const abi::Function &fn);
  /// Emits `update` to run only on the rank that owns `op`'s parameter
  /// (its `owner` in its `group`: optimizer state sharded, ZeRO stage 1);
  /// on every rank when `op` names no owner.
  void onOwner(mlir::Operation *op, llvm::function_ref<void()> update);
  /// As onOwner, with `elsewhere` emitted for the other members (null:
  /// nothing).
  void onOwner(mlir::Operation *op, llvm::function_ref<void()> update,
               llvm::function_ref<void()> elsewhere);
  /// WHALE_RT_GROUP_* of a group name the verifiers have checked: the
  /// replicas or the stages (a group of whole values).
  static int32_t groupKind(llvm::StringRef group);
  /// The group argument of a collective over `group`, or over the peers
  /// holding the other shards when `shards` is set; "hsdp" is the sharding
  /// group of either (WHALE_RT_GROUP_SHARDING, the config's shard_group).
  mlir::Value groupOf(std::optional<int64_t> shards, llvm::StringRef group) {
    return i32(groupCode(shards, group));
  }
  int32_t groupCode(std::optional<int64_t> shards, llvm::StringRef group) const;
  /// The config's shard_group: replicas a sharding group (0: not cut).
  int32_t sharding() const { return shardGroup; }
  /// A place for a started collective's request, and the request read
  /// from it after the call.
  mlir::Value requestSlot();
  mlir::Value requestIn(mlir::Value slot);

private:
  mlir::Value global(const std::string &key, mlir::Type type,
                     mlir::Attribute value);
  mlir::Type typeOf(abi::Kind kind);
  /// The declaration of `fn` after checking `args` against the C types.
  mlir::LLVM::LLVMFuncOp runtimeFn(const abi::Function &fn,
                                   mlir::ValueRange args);

  RuntimeSymbols &symbols;
  const mlir::Value slot;
  mlir::Type ptr, i32Type, i64Type, f64Type;
  int32_t shardGroup = 0;
};

} // namespace whale

#endif // WHALE_LOWERING_CONVERSION_TORUNTIME_RUNTIMECALLS_H
