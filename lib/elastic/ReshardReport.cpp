//===- ReshardReport.cpp - a reshard plan as `whale reshard` shows it -----===//

#include "lib/elastic/ReshardReport.h"

#include "runtime/core/Allocator.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

namespace whale {

std::string reshardText(const StateCollection &from, const StateCollection &to,
                        const ReshardPlan &plan) {
  using rt::formatBytes;
  std::string out;
  llvm::raw_string_ostream os(out);
  os << llvm::formatv("reshard {0}: {1} ranks -> {2} ranks, {3} state "
                      "tensors of {4} ({5} held before, {6} after)\n",
                      to.model, from.ranks.size(), to.ranks.size(),
                      to.tensors.size(), formatBytes(to.tensorBytes()),
                      formatBytes(from.heldBytes()),
                      formatBytes(to.heldBytes()));
  os << llvm::formatv("  {0} pieces: {1} stay on their device, {2} move "
                      "within a node, {3} across nodes\n",
                      plan.pieces.size(), formatBytes(plan.stayBytes),
                      formatBytes(plan.sameNodeBytes),
                      formatBytes(plan.acrossNodeBytes));
  os << llvm::formatv("  moved {0}, lower bound {1}\n",
                      formatBytes(plan.movedBytes()),
                      formatBytes(plan.lowerBoundBytes));
  os << "new rank  device                receives      old rank  device"
        "                sends\n";
  for (size_t r = 0; r < std::max(from.ranks.size(), to.ranks.size()); ++r) {
    std::string left =
        r < to.ranks.size()
            ? llvm::formatv("{0,-8}  {1,-20} {2,9}", r, to.ranks[r].device,
                            formatBytes(plan.receivedBytes[r]))
                  .str()
            : std::string(40, ' ');
    std::string right =
        r < from.ranks.size()
            ? llvm::formatv("{0,-8}  {1,-20} {2,9}", r, from.ranks[r].device,
                            formatBytes(plan.sentBytes[r]))
                  .str()
            : "";
    os << left << "     " << right << "\n";
  }
  return out;
}

std::string reshardJson(const StateCollection &from, const StateCollection &to,
                        const ReshardPlan &plan) {
  auto places = [](const StateCollection &c) {
    llvm::json::Array a;
    for (const RankPlace &p : c.ranks)
      a.push_back(llvm::json::Object{{"device", p.device}, {"node", p.node}});
    return a;
  };
  llvm::json::Array pieces;
  for (const ReshardPiece &p : plan.pieces)
    pieces.push_back(
        llvm::json::Object{{"tensor", to.tensors[p.tensor].name},
                           {"offset", llvm::json::Array(p.box.offset)},
                           {"size", llvm::json::Array(p.box.size)},
                           {"from", p.from},
                           {"to", p.to},
                           {"route", routeName(p.route)},
                           {"bytes", p.bytes}});
  llvm::json::Object root{
      {"version", 1},
      {"model", to.model},
      {"from_ranks", places(from)},
      {"to_ranks", places(to)},
      {"tensors", static_cast<int64_t>(to.tensors.size())},
      {"tensor_bytes", to.tensorBytes()},
      {"stay_bytes", plan.stayBytes},
      {"same_node_bytes", plan.sameNodeBytes},
      {"across_node_bytes", plan.acrossNodeBytes},
      {"moved_bytes", plan.movedBytes()},
      {"lower_bound_bytes", plan.lowerBoundBytes},
      {"sent_bytes", llvm::json::Array(plan.sentBytes)},
      {"received_bytes", llvm::json::Array(plan.receivedBytes)},
      {"pieces", std::move(pieces)}};
  std::string out;
  llvm::raw_string_ostream os(out);
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(root))) << "\n";
  return out;
}

} // namespace whale
