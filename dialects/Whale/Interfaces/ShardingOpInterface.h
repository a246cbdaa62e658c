//===- ShardingOpInterface.h - an op over a shard group --------*- C++ -*-===//
//
// The vocabulary of the sharding rules every op declares
// (ShardingOpInterface.td): a value's layout over a shard group, a
// pattern, and what a rule may ask of -whale-sharding about the values it
// reads (their present layouts, their shapes before sharding, the
// group).
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_DIALECTS_WHALE_INTERFACES_SHARDINGOPINTERFACE_H
#define WHALE_DIALECTS_WHALE_INTERFACES_SHARDINGOPINTERFACE_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>
#include <string>

namespace whale::sharding {

/// A value's layout over a shard group: whole (every rank holds it all),
/// part(d) (rank i holds part i of dimension d), partial (every rank holds
/// a term of a sum), or shared(d, P) (dimension d cut in P parts, fewer
/// than the ranks, each held by ranks / P consecutive ranks: rank i holds
/// part i * P / ranks). Only an op's operand asks for a shared layout
/// (grouped-query attention's keys over more ranks than key heads), so no
/// value is ever converted from one.
struct Layout {
  enum Kind { Whole, Part, Partial, Shared } kind = Whole;
  int64_t axis = -1;
  int64_t parts = 0; ///< Shared: how many parts
  static Layout whole() { return {}; }
  static Layout part(int64_t d) { return {Part, d}; }
  static Layout partial() { return {Partial, -1}; }
  static Layout shared(int64_t d, int64_t parts) { return {Shared, d, parts}; }
  bool operator==(const Layout &o) const {
    return kind == o.kind && axis == o.axis && parts == o.parts;
  }
  /// Distinct for distinct layouts a value is converted to.
  int64_t key() const {
    if (kind == Shared)
      return (int64_t(1) << 20) + axis * 4096 + parts;
    return kind == Part ? 2 + axis : static_cast<int64_t>(kind);
  }
  std::string str() const {
    if (kind == Part)
      return "part(" + std::to_string(axis) + ")";
    if (kind == Shared)
      return "shared(" + std::to_string(axis) + ", " + std::to_string(parts) +
             ")";
    return kind == Whole ? "whole" : "partial";
  }
};

/// A pattern: the layouts an op needs of its operands, which whole operands
/// are read by parts (fanout: empty for none), and the layout of its
/// result. `cost` is the pass's, in bytes moved.
struct Pattern {
  std::string name;
  llvm::SmallVector<Layout> ins;
  llvm::SmallVector<bool> fanout;
  Layout out;
  int64_t cost = 0;
};

/// What a rule may ask of the pass, and where it puts its patterns.
class Context {
public:
  virtual ~Context();
  /// The layout `operand` has now.
  virtual Layout layoutOf(mlir::Value operand) const = 0;
  /// `v`'s type in the model before sharding (a value of the rank's rows
  /// counts the group's rows).
  virtual mlir::RankedTensorType logicalType(mlir::Value v) const = 0;
  /// Ranks of the group.
  virtual int64_t groupSize() const = 0;
  /// The blocks a split dimension is cut in: the group size, or the sum of
  /// the weights of uneven shards.
  virtual int64_t units() const = 0;
  /// The group's ranks take uneven shares (their devices differ).
  virtual bool unevenShards() const = 0;
  /// The matmul pattern a test forces on weights ("", "auto", "column",
  /// "row", "replicated").
  virtual llvm::StringRef forcedMatmul() const = 0;
  /// The group's ranks read the same rows (no value holds them in parts).
  virtual bool wholeRows() const = 0;
  /// The dimension of `v` that holds the batch's rows, if any.
  virtual std::optional<int64_t> rowsAxisOf(mlir::Value v) const = 0;
  /// `v` is a parameter (through TaskGraph results).
  virtual bool isParameter(mlir::Value v) const = 0;
  /// Offers `p`; the pass keeps it where every layout fits.
  virtual void add(Pattern p) = 0;

  /// The pattern every op has: everything whole, on every rank.
  void addAllWhole(mlir::Operation *op);
};

/// Elementwise with broadcasting: split where an operand is split now,
/// the operands that broadcast along it read whole by the parts; then
/// whole. (Sums and products add their partial patterns first.)
void addElementwiseSplits(mlir::Operation *op, Context &ctx);

} // namespace whale::sharding

#include "dialects/Whale/Interfaces/ShardingOpInterface.h.inc"

#endif
