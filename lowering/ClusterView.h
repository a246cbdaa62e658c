//===- ClusterView.h - the devices as the planning passes see them -*- C++
//-*-===//
//
// The planner writes the cluster onto the module as `whale.cluster`
// {flops = array<f64: ...>, memory = array<i64: ...>, gpus = array<i1: ...>,
// threads = array<i64: ...>, models = [...]}: each device's compute rate
// (FLOP/s), memory limit (bytes, 0 for none), whether it is a GPU, the
// threads it runs with and, for a GPU known by its data sheet, its model
// name ("" for a device described by its rate alone), by rank. `gpus`,
// `threads` and `models` may be left out (CPU devices of one thread).
// Hand-written IR may carry it too. Without it every device is a nominal
// one-thread CPU device, alike and unlimited.
//
// The passes price a device's ops with the model perfmodel/DeviceSpeed.h
// makes of this description, the one the simulator prices it with.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_LOWERING_CLUSTERVIEW_H
#define WHALE_LOWERING_CLUSTERVIEW_H

#include "perfmodel/DeviceSpeed.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <limits>

namespace whale::plan {

struct ClusterView {
  llvm::SmallVector<perf::DeviceDescription> devices;

  const perf::DeviceDescription &device(int64_t d) const {
    static const perf::DeviceDescription nominal;
    return d < (int64_t)devices.size() ? devices[d] : nominal;
  }
  double rate(int64_t d) const { return perf::rateOf(device(d)); }
  llvm::StringRef model(int64_t d) const { return device(d).model; }
  int64_t limit(int64_t d) const { return device(d).memory; }
  /// The model its ops are priced with, as the simulator prices them.
  perf::DeviceModel deviceModel(int64_t d) const {
    return perf::deviceModelOf(device(d));
  }
  /// A limit as a number to compare: no limit is the most memory.
  double room(int64_t d) const {
    int64_t l = limit(d);
    return l > 0 ? double(l) : std::numeric_limits<double>::infinity();
  }
  /// Whether devices differ in rate or memory (an even plan is then not
  /// the only sensible one).
  bool uneven() const {
    for (size_t i = 1; i < devices.size(); ++i)
      if (rate(i) != rate(0) || limit(i) != limit(0))
        return true;
    return false;
  }
};

/// The cluster of the module around `op`, for `devices` devices.
inline ClusterView clusterOf(mlir::Operation *op, int64_t devices) {
  ClusterView view;
  view.devices.assign(devices, perf::DeviceDescription{});
  auto module = llvm::isa<mlir::ModuleOp>(op)
                    ? llvm::cast<mlir::ModuleOp>(op)
                    : op->getParentOfType<mlir::ModuleOp>();
  auto dict = module ? module->getAttrOfType<mlir::DictionaryAttr>(
                           "whale.cluster")
                     : mlir::DictionaryAttr();
  if (!dict)
    return view;
  auto flops = dict.getAs<mlir::DenseF64ArrayAttr>("flops");
  auto memory = dict.getAs<mlir::DenseI64ArrayAttr>("memory");
  auto gpus = dict.getAs<mlir::DenseBoolArrayAttr>("gpus");
  auto threads = dict.getAs<mlir::DenseI64ArrayAttr>("threads");
  auto names = dict.getAs<mlir::ArrayAttr>("models");
  auto sms = dict.getAs<mlir::DenseI64ArrayAttr>("sms");
  auto contexts = dict.getAs<mlir::DenseI64ArrayAttr>("contexts");
  for (int64_t d = 0; d < devices; ++d) {
    perf::DeviceDescription &out = view.devices[d];
    if (flops && d < flops.size())
      out.flops = flops[d];
    if (memory && d < memory.size())
      out.memory = memory[d];
    if (gpus && d < gpus.size())
      out.gpu = gpus[d];
    if (threads && d < threads.size())
      out.threads = static_cast<int>(threads[d]);
    if (names && d < int64_t(names.size()))
      if (auto name = llvm::dyn_cast<mlir::StringAttr>(names[d]))
        out.model = name.str();
    if (sms && d < sms.size())
      out.sms = static_cast<int>(sms[d]);
    if (contexts && d < contexts.size())
      out.contexts = static_cast<int>(std::max<int64_t>(1, contexts[d]));
    // A device named by its data sheet is a GPU (IR written before `gpus`).
    out.gpu = out.gpu || !out.model.empty();
  }
  return view;
}

} // namespace whale::plan

#endif
