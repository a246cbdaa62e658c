//===- ClusterView.h - the devices as the planning passes see them -*- C++
//-*-===//
//
// The planner writes the cluster onto the module as `whale.cluster`, a
// #whale.cluster of #whale.device in rank order (WhaleDialect.td): each
// device's compute rate (FLOP/s), memory limit (bytes, 0 for none),
// whether it is a GPU, the threads it runs with, its data sheet's name
// ("" for a device described by its rate alone), its share of its GPU's
// SMs and the contexts beside it on its GPU; the dialect checks each
// value. Hand-written IR may carry it too. Without it every device is a
// nominal one-thread CPU device, alike and unlimited.
//
// The passes price a device's ops with the model perfmodel/DeviceSpeed.h
// makes of this description, the one the simulator prices it with.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_LOWERING_TRANSFORMS_PARALLEL_CLUSTERVIEW_H
#define WHALE_LOWERING_TRANSFORMS_PARALLEL_CLUSTERVIEW_H

#include "perfmodel/DeviceAttr.h"

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
  auto cluster = module ? module->getAttrOfType<ClusterAttr>("whale.cluster")
                        : ClusterAttr();
  if (!cluster)
    return view;
  llvm::ArrayRef<DeviceAttr> given = cluster.getDevices();
  for (int64_t d = 0; d < devices && d < int64_t(given.size()); ++d)
    view.devices[d] = perf::describeDevice(given[d]);
  return view;
}

} // namespace whale::plan

#endif
