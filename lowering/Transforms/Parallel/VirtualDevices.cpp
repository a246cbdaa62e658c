//===- VirtualDevices.cpp - -whale-virtual-devices ------------------------===//
//
// Gives each TaskGraph its devices. TaskGraphs that ask for d1..dn devices
// take them in order, and the whole model is replicated K / (d1 + ... + dn)
// times over K devices (nested data parallelism); a TaskGraph without a count
// is one device per copy when the model is a pipeline. A model whose
// TaskGraphs ask for no count and is not a pipeline runs as one stage on
// every device. On one device everything is one stage. Outside a pipeline
// all TaskGraphs share every device, and a `split(c)` TaskGraph splits over
// shard groups of c consecutive devices (c = all of them without a count).
//
// Each TaskGraph becomes a pipeline stage; a stage's replicas are its
// devices across the copies. The result is the grid stage x replica.
//
// With virtual_stages = v (Megatron-LM's interleaved schedule) the n
// TaskGraphs are v model chunks on each of p = n / v stages: TaskGraph i
// runs on stage i mod p as its chunk i / p, so the model passes through
// the p stages v times. TaskGraphs i and i + p share devices, so they ask
// for the same count.
//
// With split_rows = "whole" the plan gets `row_group` = c: the replicas of
// a stage come in groups of c consecutive ones that read the same rows of
// the batch, so c ranks count as one data-parallel replica.
//
//===----------------------------------------------------------------------===//

#include "lowering/Passes.h"
#include "lowering/Plan.h"
#include "support/Limits.h"

namespace whale {
#define GEN_PASS_DEF_WHALEVIRTUALDEVICES
#include "lowering/Passes.h.inc"
} // namespace whale

using namespace mlir;
using namespace whale;

namespace {

struct VirtualDevicesPass
    : public whale::impl::WhaleVirtualDevicesBase<VirtualDevicesPass> {
  using Base::Base;

  LogicalResult place(func::FuncOp fn, OpBuilder &b) {
    SmallVector<TaskGraphOp> tgs = plan::taskGraphs(fn);
    if (tgs.empty())
      return fn.emitOpError(
          "has no TaskGraphs; run -whale-taskgraph-partition first");
    int64_t k = devices, m = microBatches;
    if (m == 0)
      m = settingsOf(fn).microBatches();
    m = std::max<int64_t>(m, 1);
    const int64_t n = tgs.size();
    bool anyCount = llvm::any_of(
        tgs, [](TaskGraphOp tg) { return tg.getDevices().has_value(); });

    // grid[stage] lists the devices of that stage's replicas.
    SmallVector<SmallVector<int64_t>> grid;
    SmallVector<int64_t> stageOfTg(n), chunkOfTg(n, 0);
    const int64_t chunks = settingsOf(fn).chunks();
    // Outside a pipeline every TaskGraph runs on every device: a split
    // TaskGraph's count is the size of its shard groups there.
    if (k == 1 || m == 1 || (!anyCount && n == 1)) {
      // One stage on every device: each TaskGraph runs on all of them.
      grid.emplace_back();
      for (int64_t d = 0; d < k; ++d)
        grid.back().push_back(d);
    } else {
      if (chunks > 1 && (n % chunks != 0 || n < 2 * chunks))
        return fn.emitOpError("has ")
               << n << " TaskGraph" << (n == 1 ? "" : "s")
               << ", which virtual_stages = " << chunks
               << " cannot deal out as " << chunks
               << " model chunks to each of two or more pipeline stages: "
                  "use a multiple of "
               << chunks << " TaskGraphs, at least " << 2 * chunks;
      const int64_t perCopy = n / chunks; // the pipeline's stages
      SmallVector<int64_t> asks;
      int64_t sum = 0;
      for (int64_t i = 0; i < n; ++i) {
        int64_t a = tgs[i].getDevices().value_or(1);
        if (i < perCopy) {
          asks.push_back(a);
          sum += a;
        } else if (a != asks[i % perCopy]) {
          return tgs[i].emitOpError("asks for ")
                 << a << " device" << (a == 1 ? "" : "s")
                 << " but runs as chunk " << i / perCopy << " of stage "
                 << i % perCopy << ", whose chunk 0 asks for "
                 << asks[i % perCopy]
                 << ": the chunks of a stage share its devices, so they ask "
                    "for the same count";
        }
      }
      if (k % sum != 0) {
        InFlightDiagnostic d = fn.emitOpError("asks for ");
        for (auto [i, a] : llvm::enumerate(asks))
          d << (i ? " + " : "") << a;
        d << " = " << sum << " devices per copy of the model (one per "
          << "TaskGraph without a count), which " << k
          << " devices cannot hold a whole number of times: use " << sum;
        if (sum * 2 != k)
          d << ", " << sum * 2;
        return d << " or another multiple of " << sum
                 << " devices, or change the counts";
      }
      const int64_t copies = k / sum;
      int64_t offset = 0;
      for (int64_t i = 0; i < perCopy; ++i) {
        grid.emplace_back();
        for (int64_t c = 0; c < copies; ++c)
          for (int64_t j = 0; j < asks[i]; ++j)
            grid.back().push_back(c * sum + offset + j);
        offset += asks[i];
      }
      for (int64_t i = 0; i < n; ++i) {
        stageOfTg[i] = i % perCopy;
        chunkOfTg[i] = i / perCopy;
      }
      for (int64_t i = 1; i < perCopy; ++i)
        if (grid[i].size() != grid[0].size())
          return tgs[i].emitOpError("has ")
                 << grid[i].size() << " replicas but the first stage has "
                 << grid[0].size()
                 << ": stages of different degrees pass activations "
                    "between different numbers of ranks, which this planner "
                    "does not do; give every stage the same count";
    }
    // Shard groups: a split TaskGraph over c devices is c consecutive
    // replicas of its stage. All split TaskGraphs of a stage share c.
    SmallVector<int64_t> stageShards(grid.size(), 1);
    for (auto [i, tg] : llvm::enumerate(tgs)) {
      if (tg.getStrategy() != Strategy::split || k == 1)
        continue;
      int64_t per = static_cast<int64_t>(grid[stageOfTg[i]].size());
      int64_t c = grid.size() == 1 ? tg.getDevices().value_or(per)
                                   : tg.getDevices().value_or(1);
      if (c < 2)
        continue;
      if (per % c != 0)
        return tg.emitOpError("splits over ")
               << c << " devices, which the " << per
               << " devices of its stage cannot hold a whole number of "
                  "times: use a count that divides "
               << per;
      int64_t &have = stageShards[stageOfTg[i]];
      if (have != 1 && have != c)
        return tg.emitOpError("splits over ")
               << c << " devices but another split TaskGraph of its stage "
               << "splits over " << have
               << ": the split TaskGraphs of a stage share one count";
      have = c;
      tg->setAttr("shards", b.getI64IntegerAttr(c));
    }
    for (auto [i, tg] : llvm::enumerate(tgs)) {
      const SmallVector<int64_t> &devs = grid[stageOfTg[i]];
      tg->setAttr("stage", b.getI64IntegerAttr(stageOfTg[i]));
      if (grid.size() > 1 && chunks > 1)
        tg->setAttr("chunk", b.getI64IntegerAttr(chunkOfTg[i]));
      tg->setAttr("virtual_device", b.getDenseI64ArrayAttr(devs));
    }
    // split_rows = "whole": the c ranks of a shard group read the same
    // rows, so every stage's replicas come in groups of c that share them
    // (a stage without a split runs them whole on each of its c ranks).
    // The split stages agree on c: outside a pipeline there is one stage,
    // and in one every stage has as many devices per copy as its count.
    int64_t rowGroup = 1;
    if (settingsOf(fn).wholeRows())
      for (int64_t c : stageShards)
        rowGroup = std::max(rowGroup, c);
    SmallVector<int64_t> flat;
    for (const auto &row : grid)
      flat.append(row.begin(), row.end());
    PlanUpdate update(fn);
    update.devices(k)
        .stages(static_cast<int64_t>(grid.size()))
        .replicas(static_cast<int64_t>(grid.front().size()))
        .grid(flat)
        .shards(stageShards);
    if (grid.size() > 1 && chunks > 1)
      update.chunks(chunks);
    if (rowGroup > 1)
      update.rowGroup(rowGroup);
    update.apply();
    return success();
  }

  void runOnOperation() override {
    if (devices < 1 || devices > kMaxClusterDevices) {
      getOperation().emitError("-whale-virtual-devices needs devices from 1 "
                               "to ")
          << kMaxClusterDevices << ", got " << int64_t(devices);
      return signalPassFailure();
    }
    OpBuilder b(&getContext());
    if (!plan::forEachModel(getOperation(),
                            [&](func::FuncOp fn) { return place(fn, b); }))
      signalPassFailure();
  }
};

} // namespace
