//===- ProcessReshard.cpp - a reshard plan carried out across processes ---===//

#include "runtime/state/ProcessReshard.h"

#include <set>
#include <tuple>

namespace whale {

namespace {

/// Tags of the driver's pieces, above any a rank program uses.
constexpr int64_t kPieceTags = int64_t(1) << 40;

} // namespace

void keepLocalPieces(const ProcessLayout &after,
                     const std::vector<int64_t> &newGrid, StateCollection &to,
                     ReshardPlan &plan) {
  auto mine = [&](int64_t rank) {
    return after.owns(newGrid[static_cast<size_t>(rank)]);
  };
  std::vector<ReshardPiece> kept;
  for (const ReshardPiece &p : plan.pieces)
    if (mine(p.to))
      kept.push_back(p);
  plan.pieces = std::move(kept);
  for (StateTensor &t : to.tensors) {
    std::vector<std::pair<int64_t, Box>> holders;
    for (const auto &h : t.holders)
      if (mine(h.first))
        holders.push_back(h);
    t.holders = std::move(holders);
  }
}

std::string exchangePieces(whale_rt_comm *comm, const ProcessLayout &before,
                           const ProcessLayout &after,
                           const std::vector<int64_t> &oldGrid,
                           const std::vector<int64_t> &newGrid,
                           const StateCollection &to, const ReshardPlan &plan,
                           HeldState &held, int64_t &sentBytes) {
  return exchangePiecesBetween(
      comm, before.process, before.perProcess,
      [&](int64_t rank) {
        return before.ownerOf(oldGrid[static_cast<size_t>(rank)]);
      },
      [&](int64_t rank) {
        return after.ownerOf(newGrid[static_cast<size_t>(rank)]);
      },
      to, plan, held, sentBytes);
}

std::string
exchangePiecesBetween(whale_rt_comm *comm, int32_t me, int64_t perProcess,
                      const std::function<int32_t(int64_t)> &sourceOf,
                      const std::function<int32_t(int64_t)> &destOf,
                      const StateCollection &to, const ReshardPlan &plan,
                      HeldState &held, int64_t &sentBytes) {
  sentBytes = 0;
  // Each box once per receiving process, in the plan's order, which every
  // process walks alike: the k-th transfer between two processes has the
  // same tag on both sides.
  std::set<std::tuple<int64_t, size_t, Box, int32_t>> done;
  const int32_t myRank = static_cast<int32_t>(me * perProcess);
  int64_t tag = kPieceTags;
  for (const ReshardPiece &p : plan.pieces) {
    const StateTensor &t = to.tensors[p.tensor];
    if (t.shape.empty())
      continue; // the step and the seed: the driver's, on every process
    const int32_t source = sourceOf(p.from), dest = destOf(p.to);
    if (source == dest || !done.insert({p.from, p.tensor, p.held, dest}).second)
      continue;
    const int64_t bytes = p.held.elements() * t.elementBytes;
    const int64_t thisTag = tag++;
    sentBytes += bytes;
    if (source != me && dest != me)
      continue; // neither end is this process
    std::vector<uint8_t> &box = held[{p.from, t.name}][p.held];
    if (source == me) {
      if (static_cast<int64_t>(box.size()) != bytes)
        return "old rank " + std::to_string(p.from) + " has no " +
               p.held.str() + " of '" + t.name + "' to send";
      if (whale_rt_comm_driver_send(
              comm, myRank, static_cast<int32_t>(dest * perProcess), thisTag,
              box.data(), bytes) != WHALE_RT_OK)
        return "sending " + p.held.str() + " of '" + t.name +
               "' to process " + std::to_string(dest) + " failed";
    } else if (dest == me) {
      box.resize(static_cast<size_t>(bytes));
      if (whale_rt_comm_driver_recv(
              comm, myRank, static_cast<int32_t>(source * perProcess), thisTag,
              box.data(), bytes) != WHALE_RT_OK)
        return "receiving " + p.held.str() + " of '" + t.name +
               "' from process " + std::to_string(source) + " failed";
    }
  }
  return "";
}

} // namespace whale
