//===- ShareCasts.cpp - -whale-share-casts --------------------------------===//
//
// amp's storage converts a parameter to bf16 once per block that reads it,
// before the model is cut. A rank program then repeats the forward and the
// backward for each micro-batch in one block, and each repetition
// converts every weight again: with 4 micro-batches, four bf16 copies of
// each weight a step where one would do. A conversion of a value nothing
// has written since an earlier conversion of it (nor that conversion's
// result) gives the same bits, so the later one reads the earlier's result
// instead.
//
//===----------------------------------------------------------------------===//

#include "dialects/Whale/IR/WhaleOps.h"
#include "lowering/Passes.h"
#include "lowering/TopLevelOps.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

namespace whale {
#define GEN_PASS_DEF_WHALESHARECASTS
#include "lowering/Passes.h.inc"
} // namespace whale

using namespace mlir;
using namespace whale;

namespace {

/// Values `op` (or an op nested in it) may write: the operands of every op
/// that is not free of memory effects (an optimizer's in-place update, an
/// in-place all-reduce).
void mayWrite(Operation *op, SmallVectorImpl<Value> &written) {
  op->walk([&](Operation *inner) {
    if (!isMemoryEffectFree(inner))
      written.append(inner->operand_begin(), inner->operand_end());
  });
}

/// `v` and the values whose memory it may share: through views (an op
/// that keeps no memory of its own for its results, as a reshape or an
/// in-place collective), every operand of the view, and theirs.
void storageOf(Value v, SmallVectorImpl<Value> &roots) {
  SmallVector<Value> todo = {v};
  llvm::SmallDenseSet<Value, 4> seen;
  while (!todo.empty()) {
    Value x = todo.pop_back_val();
    if (!seen.insert(x).second)
      continue;
    roots.push_back(x);
    Operation *def = x.getDefiningOp();
    auto cost = dyn_cast_or_null<CostOpInterface>(def);
    if (cost && cost.getOutputMemory() == 0)
      todo.append(def->operand_begin(), def->operand_end());
  }
}

void shareIn(Block &block) {
  // The first conversions of each value (one a type) since its memory, or
  // the conversion's, was last (possibly) written; and the converted
  // values by the memory whose writing ends their sharing.
  llvm::DenseMap<Value, SmallVector<CastOp, 1>> first;
  llvm::DenseMap<Value, SmallVector<Value, 1>> converted;
  SmallVector<Value> written, roots;
  for (Operation &op : llvm::make_early_inc_range(block)) {
    if (auto c = dyn_cast<CastOp>(&op)) {
      SmallVector<CastOp, 1> &made = first[c.getInput()];
      auto same = llvm::find_if(
          made, [&](CastOp m) { return m.getType() == c.getType(); });
      if (same != made.end()) {
        c.getResult().replaceAllUsesWith(same->getResult());
        c.erase();
        continue;
      }
      made.push_back(c);
      roots.clear();
      storageOf(c.getInput(), roots);
      // A later reader must not see the conversion written in place either
      // (a widened gradient all-reduced): its own memory counts too.
      roots.push_back(c.getResult());
      for (Value r : roots)
        converted[r].push_back(c.getInput());
      continue;
    }
    written.clear();
    mayWrite(&op, written);
    for (Value w : written) {
      roots.clear();
      storageOf(w, roots);
      for (Value r : roots) {
        auto it = converted.find(r);
        if (it == converted.end())
          continue;
        for (Value input : it->second)
          first.erase(input);
        converted.erase(it);
      }
    }
  }
}

void shareWithin(Operation *root) {
  root->walk([](Block *block) { shareIn(*block); });
}

struct ShareCasts : public whale::impl::WhaleShareCastsBase<ShareCasts> {
  void runOnOperation() override {
    forEachTopLevelOp(getOperation(), shareWithin);
  }
};

} // namespace
