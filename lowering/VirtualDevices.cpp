//===- VirtualDevices.cpp - -whale-virtual-devices ------------------------===//
//
// Gives each TaskGraph its devices. TaskGraphs that ask for d1..dn devices
// take them in order, and the whole model is replicated K / (d1 + ... + dn)
// times over K devices (nested data parallelism); a TaskGraph without a count
// is one device per copy when the model is a pipeline. A model whose
// TaskGraphs ask for no count and is not a pipeline runs as one stage on
// every device. On one device everything is one stage.
//
// Each TaskGraph becomes a pipeline stage; a stage's replicas are its
// devices across the copies. The result is the grid stage x replica.
//
//===----------------------------------------------------------------------===//

#include "lowering/Passes.h"
#include "lowering/Plan.h"

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
      if (auto a = dyn_cast_or_null<IntegerAttr>(
              plan::configValue(fn, "num_micro_batch")))
        m = a.getInt();
    m = std::max<int64_t>(m, 1);
    const int64_t n = tgs.size();
    bool anyCount = llvm::any_of(
        tgs, [](TaskGraphOp tg) { return tg.getDevices().has_value(); });

    // grid[stage] lists the devices of that stage's replicas.
    SmallVector<SmallVector<int64_t>> grid;
    SmallVector<int64_t> stageOfTg(n);
    if (k == 1 || (!anyCount && (m == 1 || n == 1))) {
      // One stage on every device: each TaskGraph runs on all of them.
      grid.emplace_back();
      for (int64_t d = 0; d < k; ++d)
        grid.back().push_back(d);
    } else {
      SmallVector<int64_t> asks;
      int64_t sum = 0;
      for (TaskGraphOp tg : tgs) {
        asks.push_back(tg.getDevices().value_or(1));
        sum += asks.back();
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
      for (int64_t i = 0; i < n; ++i) {
        grid.emplace_back();
        for (int64_t c = 0; c < copies; ++c)
          for (int64_t j = 0; j < asks[i]; ++j)
            grid.back().push_back(c * sum + offset + j);
        offset += asks[i];
        stageOfTg[i] = i;
      }
      for (int64_t i = 1; i < n; ++i)
        if (grid[i].size() != grid[0].size())
          return tgs[i].emitOpError("has ")
                 << grid[i].size() << " replicas but the first stage has "
                 << grid[0].size()
                 << ": stages of different degrees need bridge layers, which "
                    "the tensor-parallel planner adds (not yet)";
    }
    for (auto [i, tg] : llvm::enumerate(tgs)) {
      const SmallVector<int64_t> &devs = grid[stageOfTg[i]];
      if (tg.getStrategy() == Strategy::split && devs.size() > 1)
        return tg.emitOpError("split over ")
               << devs.size()
               << " devices is tensor parallelism, which this planner does "
                  "not do yet; run it on one device per stage";
      tg->setAttr("stage", b.getI64IntegerAttr(stageOfTg[i]));
      tg->setAttr("virtual_device", b.getDenseI64ArrayAttr(devs));
    }
    SmallVector<int64_t> flat;
    for (const auto &row : grid)
      flat.append(row.begin(), row.end());
    plan::updatePlan(
        fn, {b.getNamedAttr("devices", b.getI64IntegerAttr(k)),
             b.getNamedAttr("stages", b.getI64IntegerAttr(grid.size())),
             b.getNamedAttr("replicas",
                            b.getI64IntegerAttr(grid.front().size())),
             b.getNamedAttr("grid", b.getDenseI64ArrayAttr(flat))});
    return success();
  }

  void runOnOperation() override {
    if (devices < 1) {
      getOperation().emitError("-whale-virtual-devices needs devices >= 1");
      return signalPassFailure();
    }
    OpBuilder b(&getContext());
    if (!plan::forEachModel(getOperation(),
                            [&](func::FuncOp fn) { return place(fn, b); }))
      signalPassFailure();
  }
};

} // namespace
