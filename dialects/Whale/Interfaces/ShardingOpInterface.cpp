//===- ShardingOpInterface.cpp - the rules that many ops share ------------===//

#include "dialects/Whale/Interfaces/ShardingOpInterface.h"

#include "llvm/ADT/STLExtras.h"

#include "dialects/Whale/Interfaces/ShardingOpInterface.cpp.inc"

using namespace mlir;

namespace whale::sharding {

Context::~Context() = default;

void Context::addAllWhole(Operation *op) {
  add({"whole",
       SmallVector<Layout>(op->getNumOperands(), Layout::whole()),
       {},
       Layout::whole()});
}

void addElementwiseSplits(Operation *op, Context &ctx) {
  auto rankOf = [](Value v) {
    return cast<RankedTensorType>(v.getType()).getRank();
  };
  const int64_t rank = rankOf(op->getResult(0));
  // Result dimensions some operand is split in now (operands aligned from
  // the right, as they broadcast).
  SmallVector<int64_t> dims;
  for (Value v : op->getOperands()) {
    Layout l = ctx.layoutOf(v);
    if (l.kind != Layout::Part)
      continue;
    int64_t d = l.axis + (rank - rankOf(v));
    if (d >= 0 && !llvm::is_contained(dims, d))
      dims.push_back(d);
  }
  for (int64_t d : dims) {
    Pattern p{"split(" + std::to_string(d) + ")", {}, {}, Layout::part(d)};
    for (Value v : op->getOperands()) {
      int64_t e = d - (rank - rankOf(v));
      bool broadcast =
          e < 0 || cast<RankedTensorType>(v.getType()).getDimSize(e) == 1;
      p.ins.push_back(broadcast ? Layout::whole() : Layout::part(e));
      p.fanout.push_back(broadcast);
    }
    ctx.add(std::move(p));
  }
}

} // namespace whale::sharding
